$OOMDOC triage tests/data/messages/real/040_torch04_error_colon_nospace_crgan.txt
