$OOMDOC plan --config tests/data/configs/clip-vit-base-patch32.json --batch 512 --gpu h100 --json
