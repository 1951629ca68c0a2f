HF_HOME=tests/data/safetensors/hfcache $OOMDOC plan --model tiny-org/not-downloaded --gpu t4
