$OOMDOC triage --frobnicate tests/data/messages/jax.txt
