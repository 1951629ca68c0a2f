$OOMDOC triage tests/data/messages/real/015_luatorch_init_c_require_cudnn.txt
