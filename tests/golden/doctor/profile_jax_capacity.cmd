$OOMDOC doctor --json tests/data/profiler/jax_bfc.log tests/data/profiler/jax_memory_stats.json
