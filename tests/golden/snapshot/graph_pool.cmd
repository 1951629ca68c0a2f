$OOMDOC snapshot --top 3 tests/data/synthetic/graph_pool.pickle
