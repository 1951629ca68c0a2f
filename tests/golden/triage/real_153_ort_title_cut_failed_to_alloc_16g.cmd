$OOMDOC triage tests/data/messages/real/153_ort_title_cut_failed_to_alloc_16g.txt
