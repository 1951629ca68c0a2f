"""check_plan_measured.py OOMDOC - `oomdoc plan --json`, run as a user would (config on
stdin, the measured run's flags), against every real measured run in tests/data/measured:
training peak_allocated within 10 % each and <= 5 % median, inference generate_peak within
3 %; and the JSON contract (breakdown sums to the peak, device = reserved + context,
fits = device <= target, model states within the peak, only fitting mitigations)."""
import json
import statistics
import subprocess
import sys

OOMDOC = sys.argv[1]
KEYS = ["parameters", "gradients", "optimizer_states", "activations", "logits_and_loss",
        "kv_cache", "temporaries", "workspace"]


def plan(cfg, args):
    p = subprocess.run([OOMDOC, "plan", "--config", "-", "--json", "--gpu", "h200"] + args,
                       input=json.dumps(cfg).encode(), capture_output=True)
    if p.returncode != 0:
        sys.exit("plan failed (%d): %s" % (p.returncode, p.stderr.decode()))
    d = json.loads(p.stdout)
    assert d["schema_version"] == 1
    assert sum(d["breakdown_bytes"][k] for k in KEYS) == d["peak_allocated_bytes"], d
    assert d["device_memory_bytes"] == d["peak_reserved_bytes"] + d["cuda_context_bytes"]
    assert d["fits"] == (d["device_memory_bytes"] <= d["target"]["memory_bytes"])
    assert d["target"]["memory_bytes"] == 150109880320  # torch's total on the H200
    # model states (parameters + gradients + optimizer state; the weights when inferring)
    # are part of the peak, and only changes that fit are offered
    assert d["breakdown_bytes"]["parameters"] <= d["model_states_bytes"] <= d["peak_allocated_bytes"], d
    assert d["kv_cache_bytes_per_token"] > 0 and d["host_bytes"] == 0
    assert all(m["fits"] for m in d["mitigations"])
    return d


def main():
    bad = 0
    errs = []
    for c in json.load(open("tests/data/measured/train.json"))["cases"]:
        args = ["--batch", str(c["batch"]), "--seq", str(c["seq"]), "--precision", c["mode"],
                "--optimizer", c["opt"], "--attention", c["attn"],
                "--checkpointing", "full" if c["ckpt"] else "none"]
        d = plan(c["hf_config"], args)
        assert d["params"] == c["n_params"], (d["params"], c["n_params"])
        e = (d["peak_allocated_bytes"] - c["peak_allocated"]) / c["peak_allocated"]
        errs.append(abs(e))
        bad += abs(e) > 0.10
        print("  train %-10s %-8s %-11s %-5s ckpt=%-5s B=%-2d S=%-4d %+.2f%%" % (
            c["arch"], c["mode"], c["opt"], c["attn"], c["ckpt"], c["batch"], c["seq"], 100 * e))
    med = statistics.median(errs)
    print("  training via the CLI: median |error| %.2f%%, worst %.2f%%" % (100 * med, 100 * max(errs)))
    infer = json.load(open("tests/data/measured/infer.json"))["cases"]
    infer.append(json.load(open("tests/data/snapshots/snap_infer_llama.json"))["case"])
    # generate_peak counts from the memory in use before the model was built
    # (fixtures/gen/work.py): infer.json's cases ran in order in one process, so only the
    # first made the cuBLAS workspace; the snapshot's run (last) had its own process
    for i, c in enumerate(infer):
        made_workspace = i in (0, len(infer) - 1)
        args = ["--task", "infer", "--batch", str(c["batch"]), "--prompt", str(c["prompt"]),
                "--new-tokens", str(c["new"]), "--weights", "bf16",
                "--kv-cache", "none"]  # these runs had use_cache off
        d = plan(c["hf_config"], args)
        predicted = d["peak_allocated_bytes"] - (0 if made_workspace else d["breakdown_bytes"]["workspace"])
        e = (predicted - c["generate_peak"]) / c["generate_peak"]
        bad += abs(e) > 0.03
        print("  infer %-10s B=%d prompt=%d new=%d %+.2f%%" % (
            c["arch"], c["batch"], c["prompt"], c["new"], 100 * e))
    if bad or med > 0.05:
        sys.exit("FAIL: %d case(s) beyond their bound, median %.2f%%" % (bad, 100 * med))


main()
