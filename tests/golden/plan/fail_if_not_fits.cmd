$OOMDOC plan --config examples/configs/gpt2-355m.json --batch 64 --seq 2048 --gpu rtx4090 --fail-if-not-fits >/dev/null
