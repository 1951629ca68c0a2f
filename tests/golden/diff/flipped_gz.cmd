$OOMDOC diff tests/data/hostile/flipped.pickle.gz tests/data/synthetic/five_entry.pickle
