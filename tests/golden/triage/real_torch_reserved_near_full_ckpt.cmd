$OOMDOC triage tests/data/messages/torch_reserved_near_full_ckpt.txt # karpathy/nanoGPT#236
