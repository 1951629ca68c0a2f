$OOMDOC profile --json tests/data/profiler/jax_bfc.log
