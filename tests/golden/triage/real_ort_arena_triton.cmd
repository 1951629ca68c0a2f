$OOMDOC triage tests/data/messages/ort_arena_triton.txt # microsoft/onnxruntime#20038
