$OOMDOC triage tests/data/messages/tf_rocm_driver.txt # keras-team/keras#13889
