$OOMDOC triage tests/data/messages/real/026_torch22_request_above_device_framepack.txt
