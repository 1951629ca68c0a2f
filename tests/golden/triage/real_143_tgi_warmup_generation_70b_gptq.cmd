$OOMDOC triage tests/data/messages/real/143_tgi_warmup_generation_70b_gptq.txt
