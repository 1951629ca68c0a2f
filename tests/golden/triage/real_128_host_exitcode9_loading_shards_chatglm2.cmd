$OOMDOC triage tests/data/messages/real/128_host_exitcode9_loading_shards_chatglm2.txt
