$OOMDOC triage tests/data/messages/real/166_torch_xla_reserve_fsdp_v3_8.txt
