$OOMDOC triage tests/data/messages/real/057_mps_best_mode_clip_interrogator.txt
