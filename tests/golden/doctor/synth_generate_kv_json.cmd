$OOMDOC doctor --json tests/data/synthetic/generate_kv.pickle
