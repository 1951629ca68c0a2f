$OOMDOC plan --config tests/data/configs/bad/negative.json
