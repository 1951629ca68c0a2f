$OOMDOC diff --sites 3 tests/data/snapshots/leak_eval_no_grad.pickle tests/data/snapshots/noleak_eval.pickle
