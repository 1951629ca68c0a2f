$OOMDOC doctor --json tests/data/snapshots/leak_eval_no_grad.pickle
