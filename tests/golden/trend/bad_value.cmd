printf "step,allocated\n0,100\n1,12abc\n" | $OOMDOC trend -
