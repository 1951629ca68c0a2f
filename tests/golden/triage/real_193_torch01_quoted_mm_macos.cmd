$OOMDOC triage tests/data/messages/real/193_torch01_quoted_mm_macos.txt
