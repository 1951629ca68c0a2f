$OOMDOC triage tests/data/messages/real/024_torch21_typo_zero_free_mgfn.txt
