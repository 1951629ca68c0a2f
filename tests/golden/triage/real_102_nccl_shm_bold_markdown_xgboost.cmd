$OOMDOC triage tests/data/messages/real/102_nccl_shm_bold_markdown_xgboost.txt
