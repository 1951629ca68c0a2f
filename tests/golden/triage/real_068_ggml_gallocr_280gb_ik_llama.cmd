$OOMDOC triage tests/data/messages/real/068_ggml_gallocr_280gb_ik_llama.txt
