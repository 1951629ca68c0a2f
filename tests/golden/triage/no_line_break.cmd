{ printf 'first line\n'; head -c 20000000 /dev/zero; } | $OOMDOC triage -
