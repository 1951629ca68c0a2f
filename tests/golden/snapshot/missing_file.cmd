$OOMDOC snapshot tests/data/no-such-file.pickle
