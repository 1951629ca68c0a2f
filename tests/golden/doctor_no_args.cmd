$OOMDOC doctor
