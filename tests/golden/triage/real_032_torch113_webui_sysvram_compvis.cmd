$OOMDOC triage tests/data/messages/real/032_torch113_webui_sysvram_compvis.txt
