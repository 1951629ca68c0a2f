CUDA_VISIBLE_DEVICES=1 CUDA_DEVICE_ORDER=PCI_BUS_ID OOMDOC_FAKENVML_SCRIPT=tests/data/nvml/gpus_a100_mig.script $OOMDOC gpus --json --nvml-lib "$(dirname "$OOMDOC")"/tests/fakenvml/libnvidia-ml.so.1
