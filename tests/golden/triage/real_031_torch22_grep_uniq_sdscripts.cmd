$OOMDOC triage tests/data/messages/real/031_torch22_grep_uniq_sdscripts.txt
