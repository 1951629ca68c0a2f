$OOMDOC triage tests/data/messages/real/179_triton_autotuner_smem_headdim_mamba.txt
