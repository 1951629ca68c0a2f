$OOMDOC doctor tests/data/messages/mps_watermark.txt
