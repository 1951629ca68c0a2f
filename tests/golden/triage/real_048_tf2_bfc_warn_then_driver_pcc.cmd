$OOMDOC triage tests/data/messages/real/048_tf2_bfc_warn_then_driver_pcc.txt
