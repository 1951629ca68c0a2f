$OOMDOC triage tests/data/messages/torch21_free_barely.txt # Synthintel0/MyGirlGPT#11
