env -u OOMDOC_NVML_LIB $OOMDOC gpus --nvml-lib ./no/such/libnvidia-ml.so.1
