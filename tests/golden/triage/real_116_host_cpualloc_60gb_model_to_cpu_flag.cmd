$OOMDOC triage tests/data/messages/real/116_host_cpualloc_60gb_model_to_cpu_flag.txt
