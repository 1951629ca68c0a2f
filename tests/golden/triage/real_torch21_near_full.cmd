$OOMDOC triage tests/data/messages/torch21_near_full.txt # qingze-bai/VSmTrans#3
