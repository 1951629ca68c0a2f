$OOMDOC triage tests/data/messages/torch_reserved_split_hint.txt # Li-Chongyi/Zero-DCE#52
