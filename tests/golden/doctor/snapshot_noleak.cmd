$OOMDOC doctor tests/data/snapshots/noleak_eval.pickle
