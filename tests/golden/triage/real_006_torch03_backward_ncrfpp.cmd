$OOMDOC triage tests/data/messages/real/006_torch03_backward_ncrfpp.txt
