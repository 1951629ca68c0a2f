$OOMDOC triage tests/data/messages/jax_gpu_bufferassignment.txt # jax-ml/jax#13428
