head -c 600 tests/data/profiler/jax_device_memory.prof | $OOMDOC profile -
