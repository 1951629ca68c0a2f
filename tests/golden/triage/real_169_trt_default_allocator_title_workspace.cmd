$OOMDOC triage tests/data/messages/real/169_trt_default_allocator_title_workspace.txt
