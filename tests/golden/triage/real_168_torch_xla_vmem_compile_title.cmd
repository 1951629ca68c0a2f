$OOMDOC triage tests/data/messages/real/168_torch_xla_vmem_compile_title.txt
