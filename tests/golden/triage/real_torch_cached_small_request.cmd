$OOMDOC triage tests/data/messages/torch_cached_small_request.txt # shllln/GenerativeGraph#5
