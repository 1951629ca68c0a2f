$OOMDOC doctor tests/data/snapshots/snap_infer_llama.pickle.gz --config examples/configs/llama-160m.json --batch 8 --prompt 256
