$OOMDOC triage tests/data/messages/real/174_trt_warnings_only_voltaml_t4.txt
