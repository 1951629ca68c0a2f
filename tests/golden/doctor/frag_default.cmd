$OOMDOC doctor tests/data/extracted/frag_default_oom.txt
