$OOMDOC triage tests/data/messages/real/008_torch03_conv2d_dcpdn30.txt
