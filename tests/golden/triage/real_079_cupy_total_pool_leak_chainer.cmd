$OOMDOC triage tests/data/messages/real/079_cupy_total_pool_leak_chainer.txt
