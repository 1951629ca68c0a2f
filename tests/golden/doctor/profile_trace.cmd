$OOMDOC doctor tests/data/profiler/torch_profiler_trace.json.gz
