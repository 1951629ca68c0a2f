$OOMDOC plan --config tests/data/configs/bad/unknown_type.json
