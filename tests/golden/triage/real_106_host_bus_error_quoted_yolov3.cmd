$OOMDOC triage tests/data/messages/real/106_host_bus_error_quoted_yolov3.txt
