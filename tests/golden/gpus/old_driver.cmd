OOMDOC_FAKENVML_SCRIPT=tests/data/nvml/gpus_h200.script OOMDOC_NVML_LIB="$(dirname "$OOMDOC")"/tests/fakenvml-old/libnvidia-ml.so.1 $OOMDOC gpus
