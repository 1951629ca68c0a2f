$OOMDOC triage tests/data/messages/real/036_torch21_indented_27gib_replacer.txt
