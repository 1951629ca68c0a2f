$OOMDOC triage tests/data/messages/torch_reserved_cache_small.txt # cogsys-tuebingen/mobilestereonet#5
