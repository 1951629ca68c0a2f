$OOMDOC snapshot tests/data/hostile/long_utf8.pickle
