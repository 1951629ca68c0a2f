$OOMDOC plan --config tests/data/configs/bad/syntax.json
