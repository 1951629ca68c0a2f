$OOMDOC doctor tests/data/synthetic/spike.pickle
