$OOMDOC gpus --frobnicate
