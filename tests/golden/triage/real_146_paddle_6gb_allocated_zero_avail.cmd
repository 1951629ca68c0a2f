$OOMDOC triage tests/data/messages/real/146_paddle_6gb_allocated_zero_avail.txt
