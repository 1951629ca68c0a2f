$OOMDOC triage tests/data/messages/real/120_host_cpualloc_windows_pagefile_onnx.txt
