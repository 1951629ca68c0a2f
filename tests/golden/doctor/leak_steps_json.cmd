$OOMDOC doctor --json tests/data/extracted/leak_eval_no_grad_steps.jsonl
