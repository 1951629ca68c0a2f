$OOMDOC triage tests/data/messages/real/007_torch04_one_line_capsules.txt
