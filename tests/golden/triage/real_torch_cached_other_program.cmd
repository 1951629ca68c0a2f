$OOMDOC triage tests/data/messages/torch_cached_other_program.txt # erikguo/yolov3#4
