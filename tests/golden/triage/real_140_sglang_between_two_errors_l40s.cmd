$OOMDOC triage tests/data/messages/real/140_sglang_between_two_errors_l40s.txt
