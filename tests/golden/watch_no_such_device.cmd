OOMDOC_FAKENVML_SCRIPT=tests/golden/gpus_h200.script $OOMDOC watch --nvml-lib "$(dirname "$OOMDOC")"/tests/fakenvml/libnvidia-ml.so.1 --device 3 --duration 1s
