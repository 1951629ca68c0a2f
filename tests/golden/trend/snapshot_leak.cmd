$OOMDOC trend tests/data/snapshots/leak_eval_no_grad.pickle --capacity 24GiB
