$OOMDOC triage tests/data/messages/real/034_torch14_title_why_nospace_centerx.txt
