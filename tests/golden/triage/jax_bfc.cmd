$OOMDOC triage tests/data/profiler/jax_bfc.log
