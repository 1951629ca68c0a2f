$OOMDOC profile --top 20 tests/data/profiler/torch_key_averages.txt
