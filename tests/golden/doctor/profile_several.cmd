$OOMDOC doctor --fail-on capacity tests/data/profiler/jax_bfc.log tests/data/profiler/jax_memory_stats.json tests/data/profiler/jax_device_memory.prof tests/data/profiler/torch_memory_timeline.json
