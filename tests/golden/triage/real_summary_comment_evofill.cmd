$OOMDOC triage tests/data/messages/summary_comment_evofill.txt # MaoLab-CD/EvoFill
