$OOMDOC triage tests/data/messages/real/192_torch21_notebook_florence2_finetune.txt
