$OOMDOC trend --json --capacity 24GiB tests/data/extracted/leak_eval_no_grad_steps.jsonl
