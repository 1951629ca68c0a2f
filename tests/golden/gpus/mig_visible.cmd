CUDA_VISIBLE_DEVICES=GPU-aaaa,0,7,1 OOMDOC_FAKENVML_SCRIPT=tests/data/nvml/gpus_a100_mig.script $OOMDOC gpus --nvml-lib "$(dirname "$OOMDOC")"/tests/fakenvml/libnvidia-ml.so.1
