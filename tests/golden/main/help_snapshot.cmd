$OOMDOC help snapshot | head -n 1
