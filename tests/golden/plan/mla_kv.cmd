$OOMDOC plan --config examples/configs/deepseek-v2-lite.json --task infer --batch 4 --prompt 4096 --new-tokens 1 --gpu h100-sxm --json | grep -E '"(params|kv_cache_bytes_per_token|kv_cache)"'
