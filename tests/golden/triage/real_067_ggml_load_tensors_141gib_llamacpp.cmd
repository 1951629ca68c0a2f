$OOMDOC triage tests/data/messages/real/067_ggml_load_tensors_141gib_llamacpp.txt
