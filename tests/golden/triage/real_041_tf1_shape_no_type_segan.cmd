$OOMDOC triage tests/data/messages/real/041_tf1_shape_no_type_segan.txt
