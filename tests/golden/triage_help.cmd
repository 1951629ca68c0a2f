$OOMDOC triage --help
