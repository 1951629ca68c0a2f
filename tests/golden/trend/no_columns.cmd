printf "step,loss\n0,2.3\n1,2.1\n" | $OOMDOC trend -
