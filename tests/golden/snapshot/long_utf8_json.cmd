$OOMDOC snapshot --json tests/data/hostile/long_utf8.pickle
