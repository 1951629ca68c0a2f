$OOMDOC triage tests/data/messages/real/152_ort_triton_eighth_model_t4.txt
