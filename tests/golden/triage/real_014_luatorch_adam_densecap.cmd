$OOMDOC triage tests/data/messages/real/014_luatorch_adam_densecap.txt
