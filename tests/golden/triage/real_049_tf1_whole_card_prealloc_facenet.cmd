$OOMDOC triage tests/data/messages/real/049_tf1_whole_card_prealloc_facenet.txt
