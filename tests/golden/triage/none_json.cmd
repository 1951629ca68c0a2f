printf "epoch 1 loss 2.31\n" | $OOMDOC triage --json
