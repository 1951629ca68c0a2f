$OOMDOC doctor --json tests/data/extracted/train_oom_log.txt tests/data/extracted/leak_eval_no_grad_nvml.csv
