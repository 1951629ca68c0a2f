#!/bin/sh
# watch.sh OOMDOC - `oomdoc watch` live, against the fake NVML playing back the real NVML
# samples of tests/data/snapshots/leak_eval_no_grad.json; checks in watch_live.py.
exec python3 "$(dirname "$0")/watch_live.py" "$1"
