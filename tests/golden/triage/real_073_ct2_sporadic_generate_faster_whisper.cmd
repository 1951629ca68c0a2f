$OOMDOC triage tests/data/messages/real/073_ct2_sporadic_generate_faster_whisper.txt
