$OOMDOC trend tests/data/bad/refuse_global.pickle
