$OOMDOC trend tests/data/extracted/leak_eval_no_grad_nvml.csv --capacity 143771MiB
