"""oomdoc's commands as Python functions that return the --json documents as dicts."""
import html
import json
import os
import pickle

from . import _binding

__all__ = ["doctor", "snapshot", "plan", "triage", "replay", "trend", "diff", "Result",
           "OomdocError"]


class OomdocError(Exception):
    """A command failed: exit_code is the CLI's (2 usage, 3 bad input, 4 no GPU, 70
    internal), stderr its message."""

    def __init__(self, message, exit_code, stderr=""):
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr = stderr


class Result(dict):
    """The document `oomdoc COMMAND --json` prints, as a dict (dict(result) is exactly that
    JSON), plus: command, exit_code (0, or 1 for nothing to report / a --fail-on met),
    stderr. repr() is the command's text report; html() the HTML report, which Jupyter
    shows inline (_repr_html_)."""

    def __init__(self, doc, command, exit_code, stderr, rerun):
        super().__init__(doc)
        self.command = command
        self.exit_code = exit_code
        self.stderr = stderr
        self._rerun = rerun  # (argv without --json, blobs, report argv or None)
        self._text = None

    def text(self):
        """The command's human-readable report (what it prints without --json)."""
        if self._text is None:
            argv, blobs, _ = self._rerun
            rc, out, err, names = _binding.run(argv, blobs)
            self._text = _relabel(out.decode("utf-8", "replace"), names) if rc in (0, 1) else ""
        return self._text

    def __repr__(self):
        try:
            text = self.text()
        except Exception:  # repr must not fail: fall back to the dict
            text = ""
        return text.rstrip("\n") if text else "oomdoc.%s: %s" % (self.command, dict.__repr__(self))

    def html(self):
        """The `oomdoc report` page of the same inputs (a self-contained HTML document), or
        None for commands that have no report (plan, triage, replay, ...)."""
        _, blobs, report_argv = self._rerun
        if report_argv is None:
            return None
        rc, out, err, names = _binding.run(report_argv, blobs)
        return _relabel(out.decode("utf-8", "replace"), names) if rc in (0, 1) and out else None

    def _repr_html_(self):
        # The page inline, in an iframe's srcdoc: its stylesheet (body, h1, svg, :root)
        # stays inside it instead of restyling the notebook.
        page = self.html()
        if page is None:
            return "<pre>%s</pre>" % html.escape(repr(self))
        return ('<iframe srcdoc="%s" style="width:100%%;height:640px;border:0" '
                'title="oomdoc report"></iframe>' % html.escape(page, quote=True))


def _relabel(s, names):
    for name, label in names.items():
        s = s.replace(name, label)
    return s


def _relabel_doc(doc, names):
    if not names:
        return doc
    if isinstance(doc, str):
        return _relabel(doc, names)
    if isinstance(doc, list):
        return [_relabel_doc(x, names) for x in doc]
    if isinstance(doc, dict):
        return {k: _relabel_doc(v, names) for k, v in doc.items()}
    return doc


def _flags(flags):
    """plan_flags / options as CLI arguments: batch=8 -> --batch 8, chunked_loss=True ->
    --chunked-loss; False and None leave the flag out."""
    argv = []
    for key, value in flags.items():
        opt = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(opt)
        elif isinstance(value, (list, tuple)):
            argv += [opt, ",".join(str(v) for v in value)]
        else:
            argv += [opt, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return argv


class _Inputs:
    """Paths pass through; dicts and bytes become in-memory files (blobs)."""

    def __init__(self):
        self.blobs = []

    def add(self, x, kind):
        if isinstance(x, (str, os.PathLike)) and kind != "text":
            return os.fspath(x)
        if isinstance(x, (dict, list)) and kind == "snapshot":
            # torch.cuda.memory._snapshot()'s dict (torch 1.13: its list of segments):
            # pickled as _dump_snapshot would pickle it, then read by oomdoc's own safe
            # reader. Protocol 4: what torch writes.
            data = pickle.dumps(x, protocol=4)
        elif isinstance(x, (dict, list)):
            data = json.dumps(x).encode()
        elif isinstance(x, str):
            data = x.encode()
        elif isinstance(x, (bytes, bytearray, memoryview)):
            data = bytes(x)
        else:
            raise TypeError("oomdoc: cannot read a %s (give a path, a snapshot dict or bytes)"
                            % type(x).__name__)
        placeholder = object()
        n = sum(1 for b in self.blobs if b[2].startswith("<" + kind)) + 1
        self.blobs.append((placeholder, data, "<%s %d>" % (kind, n)))
        return placeholder


def _run(command, args, blobs, report_args=None):
    argv = [command] + args
    rc, out, err, names = _binding.run(argv + ["--json"], blobs)
    err = _relabel(err, names)
    if rc not in (0, 1):
        raise OomdocError(err.strip() or "oomdoc %s: exit %d" % (command, rc), rc, err)
    text = out.decode("utf-8", "replace").strip()
    try:
        doc = json.loads(text) if text else {}
    except ValueError as e:
        raise OomdocError("oomdoc %s printed no JSON document: %s" % (command, e), 70, err)
    report_argv = ["report"] + report_args if report_args is not None else None
    return Result(_relabel_doc(doc, names), command, rc, err, (argv, blobs, report_argv))


def doctor(*inputs, config=None, **flags):
    """oomdoc doctor: one diagnosis from snapshots (paths or torch.cuda.memory._snapshot()
    dicts), logs, step logs, nvidia-smi output; config: a config.json path or dict; flags:
    doctor's and plan's options (capacity="40GiB", gpu="h200", batch=8, fail_on="leak")."""
    ins = _Inputs()
    paths = [ins.add(x, "snapshot" if isinstance(x, (dict, list)) else "input") for x in inputs]
    cfg = ["--config", ins.add(config, "config")] if config is not None else []
    args = cfg + _flags(flags) + paths
    plan_keys = {"batch", "seq", "precision", "optimizer", "attention", "checkpointing", "gpu",
                 "capacity"}
    report_args = cfg + _flags({k: v for k, v in flags.items() if k in plan_keys}) + paths
    return _run("doctor", args, ins.blobs, report_args)


def snapshot(snap, **flags):
    """oomdoc snapshot: what a snapshot (path or dict) holds; flags: top=5, ..."""
    ins = _Inputs()
    path = ins.add(snap, "snapshot")
    return _run("snapshot", _flags(flags) + [path], ins.blobs, [path])


def plan(config_or_dir, **flags):
    """oomdoc plan: config_or_dir is a config.json path, a model directory holding one, or
    the config as a dict; flags: batch=8, seq=2048, gpu="h200", task="infer", ..."""
    ins = _Inputs()
    if isinstance(config_or_dir, (str, os.PathLike)) and os.path.isdir(config_or_dir):
        config_or_dir = os.path.join(config_or_dir, "config.json")
    return _run("plan", ["--config", ins.add(config_or_dir, "config")] + _flags(flags), ins.blobs)


def triage(text, **flags):
    """oomdoc triage on a text (an error message, a log); an os.PathLike reads that file."""
    ins = _Inputs()
    src = os.fspath(text) if isinstance(text, os.PathLike) else ins.add(text, "text")
    return _run("triage", _flags(flags) + [src], ins.blobs)


def replay(snap, settings=None, capacity=None, **flags):
    """oomdoc replay: the snapshot's trace under other allocator settings
    (settings="expandable_segments:True" or a dict) and/or a cap (capacity="2GiB")."""
    if isinstance(settings, dict):
        settings = ",".join("%s:%s" % kv for kv in settings.items())
    ins = _Inputs()
    path = ins.add(snap, "snapshot")
    args = _flags(dict(set=settings, capacity=capacity, **flags)) + [path]
    return _run("replay", args, ins.blobs)


def trend(series, **flags):
    """oomdoc trend: a per-step log or NVML series (path, or bytes of CSV / JSON Lines)."""
    ins = _Inputs()
    return _run("trend", _flags(flags) + [ins.add(series, "input")], ins.blobs)


def diff(before, after, **flags):
    """oomdoc diff between two snapshots (paths or dicts)."""
    ins = _Inputs()
    a, b = ins.add(before, "snapshot"), ins.add(after, "snapshot")
    return _run("diff", _flags(flags) + [a, b], ins.blobs)
