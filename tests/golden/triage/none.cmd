printf "epoch 1 loss 2.31\nstep 2 loss 2.20\n" | $OOMDOC triage
