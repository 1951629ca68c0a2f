$OOMDOC triage tests/data/messages/real/051_tf1_windows_backoff_1080ti.txt
