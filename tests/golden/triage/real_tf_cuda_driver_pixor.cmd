$OOMDOC triage tests/data/messages/tf_cuda_driver_pixor.txt # philip-huang/PIXOR#31
