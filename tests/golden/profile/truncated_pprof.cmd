gzip -dc tests/data/profiler/jax_device_memory.prof | head -c 1500 | $OOMDOC profile -
