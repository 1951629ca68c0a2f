"""oomdoc: diagnose and prevent GPU out-of-memory failures, from Python.

    import oomdoc
    r = oomdoc.doctor("examples/snap_train_oom.pickle")   # the `oomdoc doctor --json` document
    r["verdict"]                                          # 'cap_limit'
    r                                                     # the text report; the page in Jupyter
    oomdoc.report("run.pickle", "run.steps.jsonl", out="report.html")

    snap = torch.cuda.memory._snapshot()                  # a dict works as well as a path
    oomdoc.snapshot(snap)["devices"]
    oomdoc.triage(text=str(err))                          # a path reads the file; text= a string
    oomdoc.plan(model="meta-llama/Llama-3.1-8B", batch=8, gpu="h200")

    with oomdoc.record("run"):                            # or @oomdoc.record("run")
        ...; oomdoc.step()

The commands run in this process through liboomdoc.so (ctypes; see oomdoc._binding), or
through the oomdoc binary when the library is not found; `python -m oomdoc` (and the
`oomdoc` command a pip install puts on PATH) is the CLI itself. Standard library only;
torch is imported only by the capture functions, a framework only when its callback class
is first named (oomdoc.integrations)."""
from ._binding import backend, library_version
from .api import OomdocError, Page, Result, diff, doctor, plan, profile, replay, report, snapshot, trend, triage
from .capture import StepLogger, dump, on_oom, record, step, torch_support
from . import integrations

__version__ = "0.1.0"  # include/oomdoc/od.h's OD_VERSION, which the wheel's metadata reads; tests check they agree

__all__ = ["doctor", "snapshot", "plan", "triage", "replay", "trend", "diff", "profile", "report",
           "Result", "Page", "OomdocError", "record", "on_oom", "step", "dump", "StepLogger",
           "torch_support", "integrations", "backend", "library_version", "__version__"]
