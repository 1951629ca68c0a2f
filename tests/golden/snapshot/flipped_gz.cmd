$OOMDOC snapshot tests/data/hostile/flipped.pickle.gz
