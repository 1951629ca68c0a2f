$OOMDOC triage tests/data/messages/real/033_torch14_1gb_card_bgmatting.txt
