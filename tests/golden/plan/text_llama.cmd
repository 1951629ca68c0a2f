$OOMDOC plan --config examples/configs/llama-160m.json --batch 8 --seq 2048 --precision amp-bf16 --optimizer adamw --gpu h200
