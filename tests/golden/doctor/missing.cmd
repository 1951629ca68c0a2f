$OOMDOC doctor tests/data/no_such.log
