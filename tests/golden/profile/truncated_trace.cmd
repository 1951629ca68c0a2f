gzip -dc tests/data/profiler/torch_profiler_trace.json.gz | head -c 3000000 | $OOMDOC profile -
