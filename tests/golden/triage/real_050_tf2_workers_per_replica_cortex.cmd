$OOMDOC triage tests/data/messages/real/050_tf2_workers_per_replica_cortex.txt
