$OOMDOC triage tests/data/messages/real/058_mps_quoted_other_alloc_torchaudio.txt
