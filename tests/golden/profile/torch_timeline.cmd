$OOMDOC profile tests/data/profiler/torch_memory_timeline.json
