$OOMDOC trend --json tests/data/profiler/torch_profiler_trace.json.gz
