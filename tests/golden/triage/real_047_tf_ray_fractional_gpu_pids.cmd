$OOMDOC triage tests/data/messages/real/047_tf_ray_fractional_gpu_pids.txt
