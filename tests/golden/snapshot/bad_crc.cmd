$OOMDOC snapshot tests/data/hostile/badcrc.pickle.gz
