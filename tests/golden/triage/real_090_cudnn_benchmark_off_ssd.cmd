$OOMDOC triage tests/data/messages/real/090_cudnn_benchmark_off_ssd.txt
