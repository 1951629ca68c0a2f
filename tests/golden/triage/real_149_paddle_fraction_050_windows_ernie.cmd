$OOMDOC triage tests/data/messages/real/149_paddle_fraction_050_windows_ernie.txt
