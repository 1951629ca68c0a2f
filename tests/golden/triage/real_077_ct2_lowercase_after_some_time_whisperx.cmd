$OOMDOC triage tests/data/messages/real/077_ct2_lowercase_after_some_time_whisperx.txt
