$OOMDOC triage tests/data/messages/tf_rocm_garbage_pool.txt # keras-team/keras#13889
