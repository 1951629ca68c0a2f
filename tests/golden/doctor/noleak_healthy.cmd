$OOMDOC doctor tests/data/extracted/noleak_eval_steps.csv --fail-on leak,capacity
