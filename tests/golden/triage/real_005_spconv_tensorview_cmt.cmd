$OOMDOC triage tests/data/messages/real/005_spconv_tensorview_cmt.txt
