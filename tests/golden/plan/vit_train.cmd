$OOMDOC plan --config tests/data/configs/vit-base-patch16-224.json --batch 256 --gpu a10g
