$OOMDOC snapshot tests/data/extra/refuse_global.pickle
