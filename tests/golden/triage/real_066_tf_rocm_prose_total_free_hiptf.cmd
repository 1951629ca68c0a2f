$OOMDOC triage tests/data/messages/real/066_tf_rocm_prose_total_free_hiptf.txt
