$OOMDOC report tests/data/bad/refuse_global.pickle
