OOMDOC_FAKENVML_SCRIPT=tests/golden/gpus_h200.script OOMDOC_NVML_LIB="$(dirname "$OOMDOC")"/tests/fakenvml-old/libnvidia-ml.so.1 $OOMDOC gpus
