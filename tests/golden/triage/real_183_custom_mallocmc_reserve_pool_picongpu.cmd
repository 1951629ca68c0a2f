$OOMDOC triage tests/data/messages/real/183_custom_mallocmc_reserve_pool_picongpu.txt
