#!/bin/sh
# terminal.sh OOMDOC - text on a terminal: wrapped to its width with a hanging indent,
# nothing changed in a pipe, JSON never wrapped, untrusted strings escaped; checks in
# terminal.py.
exec python3 "$(dirname "$0")/terminal.py" "$1"
