$OOMDOC triage tests/data/messages/real/189_torch14_request_above_card_mdeq.txt
