$OOMDOC triage tests/data/messages/real/147_paddle_indented_wrap_aistudio.txt
