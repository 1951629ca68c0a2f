$OOMDOC triage tests/data/messages/real/170_trt_resize_physical_deepstream_yolo.txt
