$OOMDOC report tests/data/snapshots/frag_default.pickle tests/data/snapshots/frag_expandable.pickle | sed -n "/<section class=\"compare\">/,/<\/section>/p" | grep -v "^<path"
