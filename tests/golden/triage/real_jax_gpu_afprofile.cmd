$OOMDOC triage tests/data/messages/jax_gpu_afprofile.txt # patrickbryant1/AFProfile#8
