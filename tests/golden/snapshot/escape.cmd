$OOMDOC snapshot tests/data/hostile/escape.pickle
