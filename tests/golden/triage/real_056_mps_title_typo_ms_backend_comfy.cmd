$OOMDOC triage tests/data/messages/real/056_mps_title_typo_ms_backend_comfy.txt
