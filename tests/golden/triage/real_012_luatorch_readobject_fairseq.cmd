$OOMDOC triage tests/data/messages/real/012_luatorch_readobject_fairseq.txt
