$OOMDOC profile --json --top 3 tests/data/profiler/torch_profiler_trace.json.gz
