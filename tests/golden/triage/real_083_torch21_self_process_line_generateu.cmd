$OOMDOC triage tests/data/messages/real/083_torch21_self_process_line_generateu.txt
