$OOMDOC --version
