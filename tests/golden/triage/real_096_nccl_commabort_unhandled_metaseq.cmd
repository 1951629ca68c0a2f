$OOMDOC triage tests/data/messages/real/096_nccl_commabort_unhandled_metaseq.txt
