$OOMDOC triage tests/data/messages/real/191_torch15_k80_other_program_alband.txt
