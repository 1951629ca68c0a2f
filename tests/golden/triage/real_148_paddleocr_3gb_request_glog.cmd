$OOMDOC triage tests/data/messages/real/148_paddleocr_3gb_request_glog.txt
