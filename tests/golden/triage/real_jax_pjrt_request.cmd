$OOMDOC triage tests/data/messages/jax_pjrt_request.txt # kingoflolz/mesh-transformer-jax#66
