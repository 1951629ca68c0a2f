#!/bin/sh
# safe_io.sh OOMDOC - files written whole or not at all (report -o, profile --svg, watch
# --out), inputs that are not regular files, and names escaped in messages; checks in
# safe_io.py.
exec python3 "$(dirname "$0")/safe_io.py" "$1"
