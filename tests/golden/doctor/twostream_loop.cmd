$OOMDOC doctor tests/data/synthetic/twostream_loop.pickle
