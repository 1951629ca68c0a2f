$OOMDOC doctor tests/data/hostile/escape.pickle tests/data/hostile/long_utf8.pickle
