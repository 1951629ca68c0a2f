"""The fixture both capture test files start each test from: the stand-in torch reset to one
release's signatures (2.1 unless a class says otherwise), the real OOM snapshot
tests/data/snapshots/snap_train_oom.pickle as what torch "writes", no warning given yet, no
recording left from an earlier test (nor its observer or attempt numbers), no rank in the
environment, and an empty directory whose "run" is the recording's name. Import it after
the stand-in torch and python/ are on sys.path."""
import os
import tempfile
import unittest

import torch  # the stand-in
from oomdoc import capture

OOM_PICKLE = os.path.join(os.getcwd(), "tests/data/snapshots/snap_train_oom.pickle")
RANK_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "NODE_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE")


def fresh_capture():
    capture._warned.clear()
    capture._ooms.clear()
    capture._active = None
    capture._observer_for = None  # the stand-in forgets its observers at reset
    for k in RANK_VARS:
        os.environ.pop(k, None)


class RunCase(unittest.TestCase):
    version = "2.1"

    def setUp(self):
        torch.reset(self.version)
        torch.snapshot_source = OOM_PICKLE
        fresh_capture()
        self.tmp = tempfile.TemporaryDirectory()
        self.name = os.path.join(self.tmp.name, "run")

    def tearDown(self):
        self.tmp.cleanup()
        self.assertIsNone(capture._active, "a test left a recording running")
