$OOMDOC triage tests/data/messages/mps_watermark.txt --json
