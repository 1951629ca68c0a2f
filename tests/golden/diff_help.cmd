$OOMDOC diff --help
