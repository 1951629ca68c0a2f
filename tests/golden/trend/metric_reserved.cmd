$OOMDOC trend --metric reserved tests/data/extracted/leak_eval_no_grad_steps.csv
