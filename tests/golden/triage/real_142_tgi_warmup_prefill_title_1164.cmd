$OOMDOC triage tests/data/messages/real/142_tgi_warmup_prefill_title_1164.txt
