$OOMDOC triage tests/data/messages/real/164_directml_prose_eq_fooocus_6700xt.txt
