$OOMDOC triage tests/data/messages/torch_malloc_async_joy.txt # EvilBT/ComfyUI_SLK_joy_caption_two#28
