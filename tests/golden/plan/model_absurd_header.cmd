$OOMDOC plan --model tests/data/safetensors/bad-checkpoint --gpu t4
