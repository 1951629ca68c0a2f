$OOMDOC replay tests/data/snapshots/snap_cudagraph.pickle --verify
