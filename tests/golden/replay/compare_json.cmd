$OOMDOC replay tests/data/snapshots/frag_expandable.pickle --capacity 2GiB --compare "expandable_segments:False" --json
