$OOMDOC triage tests/data/messages/no_such_file.txt
