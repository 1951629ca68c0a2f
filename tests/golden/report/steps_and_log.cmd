$OOMDOC report tests/data/extracted/leak_eval_no_grad_steps.csv tests/data/extracted/train_oom_log.txt --capacity 40GiB
