head -c 100000000 /dev/zero | $OOMDOC report - -o report_bomb_never_written.html; s=$?; test -e report_bomb_never_written.html && echo written; exit $s
