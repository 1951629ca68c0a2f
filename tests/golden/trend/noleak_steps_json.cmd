$OOMDOC trend --json tests/data/extracted/noleak_eval_steps.jsonl
