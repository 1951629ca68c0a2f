$OOMDOC triage tests/data/messages/jax_bfc_bufferassignment_t5x.txt # google-research/t5x#870
