$OOMDOC trend --json tests/data/snapshots/noleak_eval.pickle
