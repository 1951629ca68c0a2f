$OOMDOC triage tests/data/messages/real/002_caffe_syncedmem_sstd.txt
