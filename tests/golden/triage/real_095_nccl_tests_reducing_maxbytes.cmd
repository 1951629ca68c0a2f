$OOMDOC triage tests/data/messages/real/095_nccl_tests_reducing_maxbytes.txt
