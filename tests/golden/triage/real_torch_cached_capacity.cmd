$OOMDOC triage tests/data/messages/torch_cached_capacity.txt # cherubicXN/afm_cvpr2019#8
