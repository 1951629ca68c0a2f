$OOMDOC plan --config tests/data/configs/sdxl-unet.json --batch 4 --precision mixed-bf16 --optimizer adamw-fused --checkpointing full --gpu a100-80
