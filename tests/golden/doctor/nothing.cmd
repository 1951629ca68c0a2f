printf "hello\n" | $OOMDOC doctor -
