$OOMDOC triage tests/data/messages/torch_container_self.txt # chatdoc-com/OCRFlux#42
