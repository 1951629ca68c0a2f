#!/bin/sh
# run_all: release only (see tests/run_all.sh)
# python_package.sh OOMDOC - the oomdoc Python package (python/oomdoc): capture under each
# supported torch signature and the framework callbacks (stand-in torch; transformers' and
# Lightning's callback machinery as their sources drive it, tests/python/frameworks), and
# the binding compared with OOMDOC's --json output: in-process through the
# liboomdoc.so built beside OOMDOC (a build without one, e.g. the sanitizer build, whose
# library python cannot load, tests the exec path only), then through the binary.
dir=$(dirname "$1"); [ "$dir" = . ] && dir=build/rel  # ./oomdoc is a copy of build/rel/oomdoc
status=0
for t in test_capture test_integrations; do
    if python3 tests/python/$t.py >"${TMPDIR:-/tmp}/oomdoc-$t.$$" 2>&1; then
        echo "python_package: $t: $(grep '^Ran ' "${TMPDIR:-/tmp}/oomdoc-$t.$$"), OK"
    else
        cat "${TMPDIR:-/tmp}/oomdoc-$t.$$"; status=1
    fi
    rm -f "${TMPDIR:-/tmp}/oomdoc-$t.$$"
done
if [ -f "$dir/liboomdoc.so.0" ] && [ -z "$(nm -D "$dir/liboomdoc.so.0" 2>/dev/null | grep __asan_init)" ]; then
    OOMDOC_LIBRARY="$dir/liboomdoc.so.0" OOMDOC_BACKEND=ctypes python3 tests/python/test_binding.py "$1" || status=1
else
    echo "python_package: no loadable $dir/liboomdoc.so.0: in-process binding not tested for this build"
fi
OOMDOC_BINARY="$1" OOMDOC_BACKEND=exec python3 tests/python/test_binding.py "$1" || status=1
exit $status
