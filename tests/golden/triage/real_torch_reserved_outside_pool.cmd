$OOMDOC triage tests/data/messages/torch_reserved_outside_pool.txt # One-2-3-45/One-2-3-45#25
