$OOMDOC triage tests/data/messages/jax_pjrt_request_title.txt # kingoflolz/mesh-transformer-jax#209
