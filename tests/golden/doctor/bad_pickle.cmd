$OOMDOC doctor tests/data/bad/refuse_global.pickle
