"""oomdoc: diagnose and prevent GPU out-of-memory failures, from Python.

    import oomdoc
    r = oomdoc.doctor("examples/snap_train_oom.pickle")   # the `oomdoc doctor --json` document
    r["verdict"]                                          # 'cap_limit'
    r                                                     # the text report; HTML in Jupyter

    snap = torch.cuda.memory._snapshot()                  # a dict works as well as a path
    oomdoc.snapshot(snap)["devices"]

    with oomdoc.record("run"):                            # or @oomdoc.record("run")
        ...; oomdoc.step()

The commands run in this process through liboomdoc.so (ctypes; see oomdoc._binding), or
through the oomdoc binary when the library is not found. Standard library only; torch is
imported only by the capture functions, transformers and Lightning never."""
from ._binding import backend, library_version
from .api import OomdocError, Result, diff, doctor, plan, replay, snapshot, trend, triage
from .capture import StepLogger, dump, on_oom, record, step, torch_support
from . import integrations

__version__ = "0.1.0"  # include/oomdoc/od.h's OD_VERSION; tests check they agree

__all__ = ["doctor", "snapshot", "plan", "triage", "replay", "trend", "diff", "Result",
           "OomdocError", "record", "on_oom", "step", "dump", "StepLogger", "torch_support",
           "integrations", "backend", "library_version", "__version__"]
