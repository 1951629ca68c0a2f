$OOMDOC triage --json tests/data/messages/smi_desktop_nvitop.txt # XuehaiPan/nvitop#152
