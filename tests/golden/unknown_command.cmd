$OOMDOC frobnicate
