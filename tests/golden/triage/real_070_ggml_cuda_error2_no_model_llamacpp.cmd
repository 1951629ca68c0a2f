$OOMDOC triage tests/data/messages/real/070_ggml_cuda_error2_no_model_llamacpp.txt
