$OOMDOC snapshot tests/data/messages/jax.txt
