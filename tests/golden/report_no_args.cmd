$OOMDOC report
