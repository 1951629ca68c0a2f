$OOMDOC triage tests/data/messages/real/156_ort_fusedmatmul_8gb_colab_v100.txt
