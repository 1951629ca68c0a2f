$OOMDOC triage tests/data/messages/real/130_host_exitcode9_one_line_blob_firefly.txt
