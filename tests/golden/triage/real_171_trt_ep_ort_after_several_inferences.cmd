$OOMDOC triage tests/data/messages/real/171_trt_ep_ort_after_several_inferences.txt
