$OOMDOC triage tests/data/messages/real/093_cudnn_internal_error_memory_growth_tony.txt
