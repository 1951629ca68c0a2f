env -u OOMDOC_FAKENVML_SCRIPT $OOMDOC gpus --nvml-lib "$(dirname "$OOMDOC")"/tests/fakenvml/libnvidia-ml.so.1
