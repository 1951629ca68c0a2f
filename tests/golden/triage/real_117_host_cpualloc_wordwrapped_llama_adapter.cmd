$OOMDOC triage tests/data/messages/real/117_host_cpualloc_wordwrapped_llama_adapter.txt
