$OOMDOC triage --json tests/data/messages/torch22_other_process.txt
