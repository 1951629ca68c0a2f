$OOMDOC plan --config tests/data/configs/bad/missing_layers.json
