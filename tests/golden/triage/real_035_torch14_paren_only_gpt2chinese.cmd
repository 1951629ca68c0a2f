$OOMDOC triage tests/data/messages/real/035_torch14_paren_only_gpt2chinese.txt
