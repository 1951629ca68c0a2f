head -c 2000000000 /dev/zero | gzip -1 | $OOMDOC doctor -
