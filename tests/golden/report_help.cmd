$OOMDOC report --help
