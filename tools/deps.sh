#!/bin/sh
# deps.sh [build|test] - make sure the Debian packages oomdoc needs are installed.
# As root it installs what is missing (apt-get update first); otherwise it names the
# exact apt-get line and fails.
need=""
have_header() { [ -f "/usr/include/$1" ] || [ -f "/usr/include/x86_64-linux-gnu/$1" ] || [ -f "/usr/include/$(uname -m)-linux-gnu/$1" ]; }
have_header jansson.h || need="$need libjansson-dev"
have_header zlib.h || need="$need zlib1g-dev"
command -v cc >/dev/null 2>&1 || need="$need gcc"
# make test's clang-san build (and make fuzz) compile with clang
case "${CC:-cc}" in clang*) command -v "$CC" >/dev/null 2>&1 || need="$need clang" ;; esac
if [ "$1" = test ]; then
    have_header cmocka.h || need="$need libcmocka-dev"
    command -v python3 >/dev/null 2>&1 || need="$need python3"
    # the report page's script is unit-tested with node (tests/suites/report_js.sh)
    command -v node >/dev/null 2>&1 || need="$need nodejs"
    # tests/suites/wheel.sh: Debian's python3 builds the wheel and installs it in a venv
    dpy=/usr/bin/python3
    "$dpy" -c 'import ensurepip, venv' >/dev/null 2>&1 || need="$need python3-venv"
    "$dpy" -c 'import setuptools' >/dev/null 2>&1 || need="$need python3-setuptools"
    "$dpy" -c 'import setuptools, wheel' >/dev/null 2>&1 || need="$need python3-wheel"
    "$dpy" -c 'import setuptools, pip' >/dev/null 2>&1 || need="$need python3-pip"
fi
[ -z "$need" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing$need" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends $need >&2 && exit 0
    echo "deps: apt-get failed; install by hand: apt-get install$need" >&2
    exit 1
fi
echo "oomdoc needs Debian packages that are missing. Install them with:" >&2
echo "  sudo apt-get install$need" >&2
exit 1
