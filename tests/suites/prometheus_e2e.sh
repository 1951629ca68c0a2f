#!/bin/sh
# prometheus_e2e.sh OOMDOC - a real Prometheus on 127.0.0.1 scrapes `oomdoc watch
# --prometheus` playing the leak run through the fake NVML, with the shipped rules, and
# the OOM-soon alert must fire; checks in prometheus_e2e.py. Skips (exit 0, saying so)
# only when the prometheus binary is not installed.
exec python3 "$(dirname "$0")/prometheus_e2e.py" "$1"
