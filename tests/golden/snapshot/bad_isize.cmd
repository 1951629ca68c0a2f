$OOMDOC snapshot tests/data/hostile/badlen.pickle.gz
