env -u OOMDOC_NVML_LIB $OOMDOC watch --nvml-lib ./no/such/libnvidia-ml.so.1 --duration 1s -- true
