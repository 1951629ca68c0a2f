$OOMDOC triage --json tests/data/extracted/frag_default_oom.txt
