$OOMDOC triage tests/data/messages/real/161_directml_breeze7b_fp32_title.txt
