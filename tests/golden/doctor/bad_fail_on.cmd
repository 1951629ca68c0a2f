$OOMDOC doctor --fail-on oops tests/data/messages/jax.txt
