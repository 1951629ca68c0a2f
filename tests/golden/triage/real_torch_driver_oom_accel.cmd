$OOMDOC triage tests/data/messages/torch_driver_oom_accel.txt # deepbeepmeep/Wan2GP#1083
