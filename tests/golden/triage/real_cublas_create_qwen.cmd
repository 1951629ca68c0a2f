$OOMDOC triage tests/data/messages/cublas_create_qwen.txt # QwenLM/Qwen3#873
