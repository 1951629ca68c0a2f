HF_HOME=tests/data/safetensors/hfcache $OOMDOC plan --model tiny-org/tiny-llama --task infer --gpu t4
