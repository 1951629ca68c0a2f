"""oomdoc_hook - the former single-file hook, kept so existing scripts keep working.

It is now the `oomdoc` package (python/oomdoc, installed by `make install`); this module
re-exports its capture functions:

    import oomdoc_hook                  # same as: import oomdoc
    with oomdoc_hook.record("run", max_entries=200_000):
        ...; oomdoc_hook.step()
"""
from oomdoc.capture import _warned, dump, on_oom, record, step  # noqa: F401

__all__ = ["record", "step", "dump", "on_oom"]
