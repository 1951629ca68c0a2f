$OOMDOC triage tests/data/messages/tf_rocm_hip1002.txt # ROCm/tensorflow-upstream#82
