$OOMDOC plan --config examples/configs/gpt2-124m.json --batch 1 --seq 512 --gpu rtx4090 --fail-if-not-fits >/dev/null
