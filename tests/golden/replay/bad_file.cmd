$OOMDOC replay tests/data/messages/jax.txt
