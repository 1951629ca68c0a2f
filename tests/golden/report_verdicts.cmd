for f in leak_eval_no_grad noleak_eval snap_train_oom; do printf "%s " $f; $OOMDOC report tests/data/snapshots/$f.pickle | grep -o "<span class=\"verdict[^>]*>[a-z_]*" | sed "s/.*>//"; done
