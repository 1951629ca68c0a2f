$OOMDOC triage tests/data/messages/torch_reserved_vdsr.txt # 2KangHo/vdsr_pytorch#2
