$OOMDOC triage tests/data/messages/real/141_sglang_rocm_negative_profiled_tokens.txt
