$OOMDOC triage tests/data/messages/real/021_torch14_samples_aphantasia.txt
