$OOMDOC triage tests/data/messages/real/144_tgi_total_tokens_g5_48xlarge.txt
