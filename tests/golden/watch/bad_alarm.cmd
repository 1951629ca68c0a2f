$OOMDOC watch --alarm -3
