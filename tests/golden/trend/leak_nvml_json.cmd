$OOMDOC trend --json tests/data/extracted/leak_eval_no_grad_nvml.csv
