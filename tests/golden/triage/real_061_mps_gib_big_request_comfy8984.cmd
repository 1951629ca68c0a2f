$OOMDOC triage tests/data/messages/real/061_mps_gib_big_request_comfy8984.txt
