$OOMDOC triage tests/data/messages/real/089_cudnn_lowercased_title_torch11_win.txt
