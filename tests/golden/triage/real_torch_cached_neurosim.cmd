$OOMDOC triage tests/data/messages/torch_cached_neurosim.txt # neurosim/DNN_NeuroSim_V1.3#28
