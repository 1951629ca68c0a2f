$OOMDOC triage tests/data/messages/real/052_jax_failed_request_ordinal_privacy.txt
