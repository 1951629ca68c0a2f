$OOMDOC triage tests/data/messages/real/053_jax_two_gpus_jaxline.txt
