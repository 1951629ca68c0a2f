$OOMDOC triage tests/data/messages/torch_cached_free_barely.txt # RenYurui/StructureFlow#35
