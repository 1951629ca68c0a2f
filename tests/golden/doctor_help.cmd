$OOMDOC doctor --help
