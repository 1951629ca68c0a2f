env -u OOMDOC_FAKENVML_SCRIPT $OOMDOC watch --nvml-lib "$(dirname "$OOMDOC")"/tests/fakenvml/libnvidia-ml.so.1 --duration 1s
