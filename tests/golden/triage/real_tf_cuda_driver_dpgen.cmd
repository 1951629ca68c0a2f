$OOMDOC triage tests/data/messages/tf_cuda_driver_dpgen.txt # deepmodeling/dpgen#528
