$OOMDOC doctor --fail-on leak,capacity tests/data/snapshots/leak_eval_no_grad.pickle
