$OOMDOC triage tests/data/messages/torch_reserved_unterminated.txt # singhsourabh/Resume-NER#4
