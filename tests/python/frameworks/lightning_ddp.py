"""lightning_ddp.py DIR [OOM_RANK] - a two-process DDP fit launched Lightning's way
(fake_lightning's _SubprocessScriptLauncher: this script again for local rank 1, with
LOCAL_RANK, NODE_RANK and WORLD_SIZE set and RANK not), each rank with a
LightningCallback("DIR/run"); then, in each process, a plain oomdoc.record("DIR/plain")
that has only the launcher's environment to name its rank by. OOM_RANK runs out of memory
in its third training step. Exit status: 3 if this process's fit died of the OOM, else the
highest exit status of the ranks it launched. Run from the repository root."""
import os
import sys

ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "standin"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import torch  # noqa: E402  (the stand-in)
import oomdoc  # noqa: E402
from oomdoc import integrations  # noqa: E402
from frameworks import fake_lightning  # noqa: E402

out = sys.argv[1]
oom_rank = int(sys.argv[2]) if len(sys.argv) > 2 else -1
sys.modules["lightning.pytorch"] = fake_lightning
torch.reset("2.1")
torch.snapshot_source = os.path.join(ROOT, "tests/data/snapshots/snap_train_oom.pickle")
torch.script_steps([(100 + i, 200 + i, 300 + i) for i in range(8)])
trainer = None


def train_step(i):
    torch.run_step()
    if trainer.global_rank == oom_rank and i == 2:
        torch.simulate_oom()
    return {"loss": 1.0}


trainer = fake_lightning.Trainer([integrations.LightningCallback(os.path.join(out, "run"), doctor=False)],
                                 train_step, max_steps=4, num_sanity_val_steps=0, devices=2)
status = 0
try:
    trainer.fit()
except torch.cuda.OutOfMemoryError:
    status = 3
for p in trainer.strategy.launcher.procs:
    status = max(status, p.wait())
with oomdoc.record(os.path.join(out, "plain")):
    torch.run_step()
    oomdoc.step()
sys.exit(status)
