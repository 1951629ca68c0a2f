$OOMDOC snapshot --json --top 2 tests/data/synthetic/graph_pool.pickle
