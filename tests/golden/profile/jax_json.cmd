$OOMDOC profile --json tests/data/profiler/jax_device_memory.prof tests/data/profiler/jax_memory_stats.json
