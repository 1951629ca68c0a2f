$OOMDOC triage tests/data/messages/real/062_mps_ratio_zero_still_130112.txt
