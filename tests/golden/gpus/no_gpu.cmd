OOMDOC_FAKENVML_SCRIPT=/dev/null $OOMDOC gpus --nvml-lib "$(dirname "$OOMDOC")"/tests/fakenvml/libnvidia-ml.so.1
