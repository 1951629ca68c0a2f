$OOMDOC profile --help
