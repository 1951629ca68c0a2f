$OOMDOC triage tests/data/messages/real/009_torch03_backticked_psmnet.txt
