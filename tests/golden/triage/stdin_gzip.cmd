gzip -c tests/data/messages/hip_fragmentation.txt | $OOMDOC triage - --json
