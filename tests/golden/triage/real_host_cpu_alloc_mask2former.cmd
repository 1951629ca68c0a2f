$OOMDOC triage tests/data/messages/host_cpu_alloc_mask2former.txt # facebookresearch/Mask2Former#185
