$OOMDOC profile --top 0 tests/data/profiler/jax_bfc.log
