"""The fixture both capture test files start each test from: the stand-in torch reset to one
release's signatures (2.1 unless a class says otherwise), the real OOM snapshot
tests/data/snapshots/snap_train_oom.pickle as what torch "writes", no warning given yet, no
RANK / WORLD_SIZE, and an empty directory whose "run" is the recording's name. Import it
after the stand-in torch and python/ are on sys.path."""
import os
import tempfile
import unittest

import torch  # the stand-in
from oomdoc import capture

OOM_PICKLE = os.path.join(os.getcwd(), "tests/data/snapshots/snap_train_oom.pickle")


class RunCase(unittest.TestCase):
    version = "2.1"

    def setUp(self):
        torch.reset(self.version)
        torch.snapshot_source = OOM_PICKLE
        capture._warned.clear()
        self.tmp = tempfile.TemporaryDirectory()
        self.name = os.path.join(self.tmp.name, "run")
        for k in ("RANK", "WORLD_SIZE"):
            os.environ.pop(k, None)

    def tearDown(self):
        self.tmp.cleanup()
