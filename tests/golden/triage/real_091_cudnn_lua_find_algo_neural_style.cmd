$OOMDOC triage tests/data/messages/real/091_cudnn_lua_find_algo_neural_style.txt
