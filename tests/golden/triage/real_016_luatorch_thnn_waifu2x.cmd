$OOMDOC triage tests/data/messages/real/016_luatorch_thnn_waifu2x.txt
