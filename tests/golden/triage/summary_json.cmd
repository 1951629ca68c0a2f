$OOMDOC triage --json tests/data/extracted/frag_default_summary.txt
