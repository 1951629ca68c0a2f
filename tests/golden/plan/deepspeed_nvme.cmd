$OOMDOC plan --config tests/data/configs/llama-2-7b.json --framework deepspeed --zero 3 --dp 8 --zero-init --offload-optimizer nvme --offload-params nvme --buffer-factor 2 --seq 2048 --gpu a100-40
