$OOMDOC report tests/data/snapshots/nonexistent.pickle
