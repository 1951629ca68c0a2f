$OOMDOC triage tests/data/messages/real/178_triton_smem_hardware_limitation_rtx3090.txt
