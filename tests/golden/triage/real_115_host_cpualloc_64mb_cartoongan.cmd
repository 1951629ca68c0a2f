$OOMDOC triage tests/data/messages/real/115_host_cpualloc_64mb_cartoongan.txt
