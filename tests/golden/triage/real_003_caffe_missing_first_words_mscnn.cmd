$OOMDOC triage tests/data/messages/real/003_caffe_missing_first_words_mscnn.txt
