#!/bin/sh
# run_all: release only (see tests/run_all.sh)
# report_js.sh OOMDOC - the report page's script as JavaScript: its arithmetic
# (lib/render/report_util.js) unit-tested with node's own runner (tests/js), and the page's
# script, its tests and the browser test linted with ESLint (pinned in
# tests/browser/package-lock.json; .ci/run installs it with npm ci). Needs node (Debian
# package nodejs, which make test installs); ESLint missing is a skip with the command that
# installs it, since it comes from npm.
fail=0
command -v node >/dev/null 2>&1 || { echo "FAIL report_js: node is needed (apt-get install nodejs)"; exit 1; }
if node --test tests/js/report_util.test.js >"${TMPDIR:-/tmp}/report_js.$$" 2>&1; then
    echo "report_js: $(grep -c '^ok ' "${TMPDIR:-/tmp}/report_js.$$") JavaScript unit tests passed"
else
    cat "${TMPDIR:-/tmp}/report_js.$$"
    echo "FAIL report_js: JavaScript unit tests"
    fail=1
fi
rm -f "${TMPDIR:-/tmp}/report_js.$$"
ESLINT=tests/browser/node_modules/.bin/eslint
if [ -x "$ESLINT" ]; then
    if "$ESLINT" -c tests/browser/eslint.config.js lib/render/report.js lib/render/report_util.js tests/js \
        tests/browser/report_test.js tests/browser/eslint.config.js; then
        echo "report_js: eslint clean"
    else
        echo "FAIL report_js: eslint"
        fail=1
    fi
else
    echo "SKIP report_js lint: no ESLint (cd tests/browser && npm ci)"
fi
exit $fail
