$OOMDOC triage tests/data/messages/smi_desktop_nvitop.txt # XuehaiPan/nvitop#152
