$OOMDOC triage tests/data/messages/real/046_tf1_stylegan_tile_6d.txt
