$OOMDOC report Makefile
