$OOMDOC triage tests/data/messages/cudnn_cntk.txt # microsoft/CNTK#220
