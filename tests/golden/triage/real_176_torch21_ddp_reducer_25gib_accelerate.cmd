$OOMDOC triage tests/data/messages/real/176_torch21_ddp_reducer_25gib_accelerate.txt
