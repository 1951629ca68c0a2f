#!/bin/sh
# run_all: release only (see tests/run_all.sh)
# python_real_torch.sh OOMDOC - the oomdoc package beside a real torch: Debian's
# python3-torch (torch 1.13, CPU) under Debian's /usr/bin/python3 (.ci/run installs it).
# Without it the suite says so and passes, unless OOMDOC_REQUIRE_TORCH=1 (CI).
dir=$(dirname "$1"); [ "$dir" = . ] && dir=build/rel  # ./oomdoc is a copy of build/rel/oomdoc
py=/usr/bin/python3
if ! [ -x "$py" ] || ! "$py" -c 'import torch' >/dev/null 2>&1; then
    echo "python_real_torch: $py cannot import torch (apt-get install python3-torch)"
    [ "${OOMDOC_REQUIRE_TORCH:-0}" = 1 ] && exit 1
    exit 0
fi
lib="$dir/liboomdoc.so.0"
if ! [ -f "$lib" ] || nm -D "$lib" 2>/dev/null | grep -q __asan_init; then
    lib=build/rel/liboomdoc.so.0  # the sanitizer build's library cannot load into python
fi
[ -f "$lib" ] || { echo "python_real_torch: no $lib (run make)"; exit 1; }
OOMDOC_LIBRARY="$lib" "$py" tests/python/test_real_torch.py
