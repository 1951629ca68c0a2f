$OOMDOC watch --interval 5parsecs
