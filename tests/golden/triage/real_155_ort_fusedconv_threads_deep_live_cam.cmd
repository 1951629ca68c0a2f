$OOMDOC triage tests/data/messages/real/155_ort_fusedconv_threads_deep_live_cam.txt
