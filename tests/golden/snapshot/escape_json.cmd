$OOMDOC snapshot --json tests/data/hostile/escape.pickle
