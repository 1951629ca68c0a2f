printf "step,allocated\n0,100\n1,200\n" | $OOMDOC trend -
