$OOMDOC triage tests/data/messages/real/029_torch16_half_card_elsewhere_monodepth2.txt
