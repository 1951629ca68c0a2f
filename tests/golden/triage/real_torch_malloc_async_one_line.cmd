$OOMDOC triage tests/data/messages/torch_malloc_async_one_line.txt # continue-revolution/sd-webui-animatediff#320
