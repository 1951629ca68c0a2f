$OOMDOC trend
