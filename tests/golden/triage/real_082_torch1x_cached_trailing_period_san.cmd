$OOMDOC triage tests/data/messages/real/082_torch1x_cached_trailing_period_san.txt
