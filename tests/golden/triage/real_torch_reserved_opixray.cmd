$OOMDOC triage tests/data/messages/torch_reserved_opixray.txt # OPIXray-author/OPIXray#5
