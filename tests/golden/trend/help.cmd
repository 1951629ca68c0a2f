$OOMDOC trend --help
