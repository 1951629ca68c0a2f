$OOMDOC triage tests/data/messages/real/054_jax_no_prealloc_equinox.txt
