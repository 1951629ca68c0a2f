$OOMDOC triage tests/data/messages/real/162_directml_quoted_in_title_amd8gb.txt
