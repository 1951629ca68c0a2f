$OOMDOC trend --capacity lots tests/data/extracted/noleak_eval_steps.csv
