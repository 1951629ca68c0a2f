$OOMDOC triage tests/data/messages/real/059_mps_intel_radeon_llamaindex.txt
