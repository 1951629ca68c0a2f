$OOMDOC triage tests/data/messages/real/180_triton_smem_logger_x5_rtx2080ti.txt
