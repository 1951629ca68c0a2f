head -c 5000 tests/data/profiler/torch_memory_timeline.json | $OOMDOC profile -
