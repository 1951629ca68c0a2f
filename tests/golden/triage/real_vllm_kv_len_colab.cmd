$OOMDOC triage tests/data/messages/vllm_kv_len_colab.txt # basalam/product-catalog-generator#10
