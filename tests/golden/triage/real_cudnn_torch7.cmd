$OOMDOC triage tests/data/messages/cudnn_torch7.txt # torch/torch7#780
