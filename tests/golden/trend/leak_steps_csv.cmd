$OOMDOC trend tests/data/extracted/leak_eval_no_grad_steps.csv --capacity 24GiB
