#!/bin/sh
# prometheus.sh OOMDOC - the fleet files in deploy/: promtool check rules and promtool test
# rules on deploy/prometheus/oomdoc-rules.yml, promtool check metrics on what watch serves,
# and every metric the rules and the Grafana board use served by watch; checks in
# prometheus_rules.py. Skips (exit 0, saying so) only when promtool is not installed.
exec python3 "$(dirname "$0")/prometheus_rules.py" "$1"
