$OOMDOC triage tests/data/messages/caffe_syncedmem.txt # zeakey/hed#2
