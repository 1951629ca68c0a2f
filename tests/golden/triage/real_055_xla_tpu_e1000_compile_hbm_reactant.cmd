$OOMDOC triage tests/data/messages/real/055_xla_tpu_e1000_compile_hbm_reactant.txt
