$OOMDOC snapshot --top 2 tests/data/extra/torch113_layout.pickle
