$OOMDOC triage tests/data/messages/jax_wrapped_request.txt # jax-ml/jax#788
