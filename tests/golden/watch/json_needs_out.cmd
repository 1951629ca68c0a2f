OOMDOC_FAKENVML_SCRIPT=tests/data/nvml/gpus_h200.script $OOMDOC watch --nvml-lib "$(dirname "$OOMDOC")"/tests/fakenvml/libnvidia-ml.so.1 --json --duration 1s
