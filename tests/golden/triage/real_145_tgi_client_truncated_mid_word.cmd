$OOMDOC triage tests/data/messages/real/145_tgi_client_truncated_mid_word.txt
