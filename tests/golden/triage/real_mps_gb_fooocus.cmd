$OOMDOC triage tests/data/messages/mps_gb_fooocus.txt # lllyasviel/Fooocus#1139
