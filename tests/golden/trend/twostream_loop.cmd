$OOMDOC trend tests/data/synthetic/twostream_loop.pickle
