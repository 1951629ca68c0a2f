$OOMDOC triage tests/data/messages/host_cpu_alloc_vrt.txt # JingyunLiang/VRT#49
