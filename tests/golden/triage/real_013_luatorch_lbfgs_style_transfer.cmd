$OOMDOC triage tests/data/messages/real/013_luatorch_lbfgs_style_transfer.txt
