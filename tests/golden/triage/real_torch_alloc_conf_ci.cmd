$OOMDOC triage tests/data/messages/torch_alloc_conf_ci.txt # huggingface/trl#5197
