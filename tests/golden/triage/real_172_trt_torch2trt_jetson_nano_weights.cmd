$OOMDOC triage tests/data/messages/real/172_trt_torch2trt_jetson_nano_weights.txt
