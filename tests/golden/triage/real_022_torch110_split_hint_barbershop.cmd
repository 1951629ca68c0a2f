$OOMDOC triage tests/data/messages/real/022_torch110_split_hint_barbershop.txt
