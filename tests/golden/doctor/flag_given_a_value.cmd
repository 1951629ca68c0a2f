$OOMDOC doctor --json=yes tests/data/snapshots/frag_default.pickle
