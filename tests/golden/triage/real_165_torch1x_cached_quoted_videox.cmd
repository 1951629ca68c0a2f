$OOMDOC triage tests/data/messages/real/165_torch1x_cached_quoted_videox.txt
