#!/bin/sh
# python_hook.sh OOMDOC - python/oomdoc_hook.py: unit tests with a stand-in torch, then the
# end-to-end check that oomdoc reads the files it writes (tests/python/e2e_hook.py).
python3 tests/python/test_oomdoc_hook.py || exit 1
python3 tests/python/e2e_hook.py "$1"
