$OOMDOC diff tests/data/synthetic/five_entry.pickle tests/data/hostile/escape.pickle
