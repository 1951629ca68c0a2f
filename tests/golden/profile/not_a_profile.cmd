$OOMDOC profile tests/data/profiler/torch_prof_run.json
