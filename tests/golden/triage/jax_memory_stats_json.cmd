$OOMDOC triage --json tests/data/profiler/jax_memory_stats.json
