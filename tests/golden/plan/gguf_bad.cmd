$OOMDOC plan --model tests/data/gguf/bad/short-data.gguf --task infer
