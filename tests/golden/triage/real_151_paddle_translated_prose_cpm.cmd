$OOMDOC triage tests/data/messages/real/151_paddle_translated_prose_cpm.txt
