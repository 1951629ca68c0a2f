$OOMDOC triage tests/data/messages/real/011_luatorch_resize_binarynet.txt
