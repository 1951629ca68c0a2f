$OOMDOC triage tests/data/messages/real/184_custom_cudamalloc_dev_pos_icp.txt
