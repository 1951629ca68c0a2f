$OOMDOC triage tests/data/messages/nccl_enqueue_opensora.txt # PKU-YuanGroup/Open-Sora-Plan#386
