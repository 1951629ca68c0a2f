$OOMDOC triage tests/data/messages/ort_arena_corrupt.txt # microsoft/onnxruntime#22702
