$OOMDOC snapshot tests/data/bad/refuse_global.pickle
