$OOMDOC doctor tests/data/extracted/leak_eval_no_grad_steps.csv --fail-on leak
