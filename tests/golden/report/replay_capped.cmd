$OOMDOC report tests/data/snapshots/frag_default.pickle --capacity 2GiB | grep -o "Allocator replay.*" | sed "s/<[^>]*>//g"
