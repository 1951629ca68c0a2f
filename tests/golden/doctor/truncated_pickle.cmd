printf "\200\004\225garbage" | $OOMDOC doctor -
