$OOMDOC triage tests/data/messages/jax.txt
