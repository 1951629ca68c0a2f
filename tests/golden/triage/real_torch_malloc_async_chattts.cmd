$OOMDOC triage tests/data/messages/torch_malloc_async_chattts.txt # AIFSH/ComfyUI-ChatTTS#9
