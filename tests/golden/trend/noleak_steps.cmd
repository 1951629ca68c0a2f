$OOMDOC trend tests/data/extracted/noleak_eval_steps.csv
