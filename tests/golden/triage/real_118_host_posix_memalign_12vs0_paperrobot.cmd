$OOMDOC triage tests/data/messages/real/118_host_posix_memalign_12vs0_paperrobot.txt
