"""oomdoc's commands as Python functions that return the --json documents as dicts.

A path is a str or an os.PathLike everywhere; data in memory is passed by value: a
snapshot dict (torch.cuda.memory._snapshot()), bytes, or a text through text=. Options are
keywords named as the CLI's (batch=8 is --batch 8, fail_on="leak" is --fail-on leak,
chunked_loss=True is --chunked-loss)."""
from __future__ import annotations

import html
import json
import os
import pickle
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _binding

__all__ = ["doctor", "snapshot", "plan", "triage", "replay", "trend", "diff", "profile",
           "report", "Result", "Page", "OomdocError"]

PathLike = Union[str, "os.PathLike[str]"]
Snapshot = Union[PathLike, Dict[str, Any], List[Any], bytes]  # a path, _snapshot()'s value, a pickle
Input = Union[PathLike, Dict[str, Any], List[Any], bytes]


class OomdocError(Exception):
    """A command failed: exit_code is the CLI's (2 usage, 3 bad input, 4 no GPU, 70
    internal), stderr its message."""

    def __init__(self, message: str, exit_code: int, stderr: str = "") -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr = stderr


class _Run:
    """A command's argv and in-memory inputs, kept so that its other renderings (the text
    report, the HTML page) are made from the very inputs its JSON was."""

    def __init__(self, command: str, args: List[Any], blobs: List[_binding.Blob],
                 page_args: Optional[List[Any]]) -> None:
        self.command = command
        self.args = args
        self.blobs = blobs
        self.page_args = page_args  # `oomdoc report` argv (without "report"), or None


class Result(Dict[str, Any]):
    """The document `oomdoc COMMAND --json` prints, as a dict (dict(result) is exactly that
    JSON), plus: command, exit_code (0, or 1 for nothing to report / a --fail-on met),
    stderr. text() is the command's text report, and repr() shows it; html() is the
    `oomdoc report` page of the same inputs (doctor, snapshot, trend), which Jupyter
    shows inline, or the page's error; plan and triage show a table."""

    def __init__(self, doc: Mapping[str, Any], run: _Run, exit_code: int, stderr: str,
                 text: Optional[str] = None) -> None:
        super().__init__(doc)
        self.command = run.command
        self.exit_code = exit_code
        self.stderr = stderr
        self._run = run
        self._rendered: Dict[str, _binding.Output] = {}
        self._names: Dict[str, str] = {}
        self._text_of_json = text  # the text report made from this very document, if any

    def _rendering(self, form: str) -> _binding.Output:
        # The text comes from the JSON's own run where the library makes it from the
        # document (doctor). Otherwise the CLI prints one form per run: each is made on
        # first use, over the same in-memory inputs the JSON was made from, and kept.
        if form not in self._rendered:
            if form == "text" and self._text_of_json is not None:
                self._rendered[form] = _binding.Output(self.exit_code, self._text_of_json.encode(), "")
            else:
                argv = [self.command] + self._run.args if form == "text" else ["report"] + (self._run.page_args or [])
                runs = _binding.run_forms({form: argv}, self._run.blobs)
                self._rendered[form] = runs[form]
                self._names.update(runs.names)
        return self._rendered[form]

    def text(self) -> str:
        """The command's human-readable report (what it prints without --json)."""
        o = self._rendering("text")
        if o.exit_code not in (0, 1):
            raise OomdocError(o.err.strip() or "oomdoc %s: exit %d" % (self.command, o.exit_code),
                              o.exit_code, o.err)
        return _binding._relabel(o.out.decode("utf-8", "replace"), self._names)

    def __repr__(self) -> str:
        try:
            text = self.text()
        except Exception as e:  # repr must not fail: say why, then the dict
            return "oomdoc.%s (text report unavailable: %s): %s" % (self.command, e, dict.__repr__(self))
        return text.rstrip("\n") if text.strip() else "oomdoc.%s: %s" % (self.command, dict.__repr__(self))

    def html(self) -> Optional[str]:
        """The `oomdoc report` page of the same inputs and options (a self-contained HTML
        document), or None for commands that have none (plan, triage, replay, diff,
        profile). Raises OomdocError with report's message when the page cannot be made."""
        if self._run.page_args is None:
            return None
        o = self._rendering("html")
        if o.exit_code not in (0, 1) or not o.out:
            raise OomdocError(o.err.strip() or "oomdoc report: exit %d" % o.exit_code, o.exit_code, o.err)
        return _page(o.out, self._names)

    def _repr_html_(self) -> str:
        if self._run.page_args is None:
            table = _TABLES.get(self.command)
            body = table(self) if table else ""
            return body + _details("text report", self._text_or_error())
        try:
            page = self.html()
        except OomdocError as e:
            return _error_box("oomdoc report", e) + _details("text report", self._text_or_error(), True)
        return _iframe(page or "")

    def _text_or_error(self) -> str:
        try:
            return self.text()
        except OomdocError as e:
            return "the text report failed (exit %d): %s" % (e.exit_code, e)


class Page(str):
    """An `oomdoc report` page: the HTML text itself (a str), with path (where it was
    written, or None); Jupyter shows it inline."""

    path: Optional[str]

    def __new__(cls, text: str, path: Optional[str]) -> "Page":
        self = super().__new__(cls, text)
        self.path = path
        return self

    def __repr__(self) -> str:
        where = "written to %s" % self.path if self.path else "not written to a file"
        return "<oomdoc report page: %d bytes, %s>" % (len(self), where)

    def _repr_html_(self) -> str:
        return _iframe(str(self))


# ---------------------------------------------------------------------------------------
# HTML views

def _iframe(page: str) -> str:
    """The page in an iframe (its stylesheet stays inside it instead of restyling the
    notebook) as tall as its content: measured once loaded, and again whenever it changes
    (a <details> opened); before that, and where scripts are off, an estimate."""
    fit = ("(function(f){var d=f.contentDocument;if(!d||!d.body)return;"
           "var fit=function(){f.style.height=Math.ceil(d.body.getBoundingClientRect().bottom"
           "+parseFloat(getComputedStyle(d.body).marginBottom||0))+'px'};fit();"
           "if(window.ResizeObserver)new ResizeObserver(fit).observe(d.body)})(this)")
    return ('<iframe srcdoc="%s" style="width:100%%;height:%dpx;border:0" title="oomdoc report" '
            'onload="%s"></iframe>' % (html.escape(page, quote=True), _estimate_height(page),
                                       html.escape(fit, quote=True)))


def _estimate_height(page: str) -> int:
    """A page's height near the report's 960 px width, for renderers that run no script:
    its plots' heights (viewBox), and its text blocks' lines (about 95 characters each)."""
    body = re.sub(r"(?s)<(script|style)[^>]*>.*?</\1>", "", page)
    plots = sum(int(h) for h in re.findall(r'<svg[^>]*viewBox="0 0 \d+ (\d+)"', body))
    lines = 0
    for tag, inner in re.findall(r"(?s)<(h[1-6]|p|li|tr|summary|pre)[ >](.*?)</\1>", body):
        text = html.unescape(re.sub(r"<[^>]+>", "", inner))
        lines += text.count("\n") + 1 if tag == "pre" else max(1, -(-len(text) // 95))
    return max(200, min(30000, int(1.15 * plots) + 28 * lines + 300))


def _error_box(what: str, e: OomdocError) -> str:
    return ('<div style="border-left:4px solid #c62828;padding:.4em .8em;margin:.4em 0;'
            'background:rgba(198,40,40,.08)"><b>%s failed (exit %d)</b><pre style="white-space:'
            'pre-wrap;margin:.3em 0 0">%s</pre></div>' % (html.escape(what), e.exit_code, html.escape(str(e))))


def _details(summary: str, text: str, open_: bool = False) -> str:
    return ("<details%s><summary>%s</summary><pre>%s</pre></details>"
            % (" open" if open_ else "", html.escape(summary), html.escape(text)))


def _iec(n: Optional[float]) -> str:
    """Bytes in IEC units, as the CLI's text (od_format_iec: "1023 B", "18.59 GiB")."""
    if n is None:
        return "—"
    n = int(n)
    if n < 1024:
        return "%d B" % n
    v, units = float(n), ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    u = -1
    while v >= 1024.0 and u < 5:
        v /= 1024.0
        u += 1
    return "%.2f %s" % (v, units[u])


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[int] = ()) -> str:
    def cell(tag: str, i: int, v: Any) -> str:
        style = ' style="text-align:right;white-space:nowrap"' if i in right else ' style="text-align:left"'
        return "<%s%s>%s</%s>" % (tag, style, html.escape(str(v)), tag)
    out = ["<table><thead><tr>", "".join(cell("th", i, h) for i, h in enumerate(head)), "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _plan_table(r: Result) -> str:
    target = r.get("target") or {}
    fits = r.get("fits")
    head = "<p><b>%s</b> on %s: peak %s allocated, device memory %s of %s; %s%s</p>" % (
        html.escape(str((r.get("model") or {}).get("model_type", "model"))),
        html.escape(str(target.get("name", "?"))), _iec(r.get("peak_allocated_bytes")),
        _iec(r.get("device_memory_bytes")), _iec(target.get("memory_bytes")),
        "fits" if fits else ("does not fit" if fits is False else "fit unknown"),
        "; largest batch that fits: %s" % r["max_batch"] if r.get("max_batch") is not None else "")
    parts = [head]
    breakdown = [(k.replace("_", " "), _iec(v)) for k, v in (r.get("breakdown_bytes") or {}).items() if v]
    if breakdown:
        parts.append(_table(["at the peak", "bytes"], breakdown, right=[1]))
    mit = [(i + 1, m.get("change", ""), _iec(m.get("peak_allocated_bytes")), _iec(m.get("device_memory_bytes")),
            "yes" if m.get("fits") else "no", m.get("compute_overhead", ""))
           for i, m in enumerate(r.get("mitigations") or [])]
    if mit:
        parts.append("<p>changes that lower the peak, cheapest compute first</p>")
        parts.append(_table(["#", "change", "peak", "device", "fits", "compute"], mit, right=[0, 2, 3]))
    return "".join(parts)


def _triage_table(r: Result) -> str:
    rows = []
    for rep in r.get("reports") or []:
        v = rep.get("verdict") or {}
        rows.append((rep.get("line", ""), rep.get("framework", ""), v.get("name", ""),
                     _iec(rep.get("requested_bytes")), _iec(rep.get("free_bytes")), v.get("reason", "")))
    if not rows:
        return "<p>no out-of-memory report found in %s</p>" % html.escape(str(r.get("input", "the input")))
    return _table(["line", "framework", "verdict", "requested", "free", "why"], rows, right=[0, 3, 4])


_TABLES = {"plan": _plan_table, "triage": _triage_table}


# ---------------------------------------------------------------------------------------
# Arguments

def _path(x: Any, what: str) -> str:
    if not isinstance(x, (str, os.PathLike)):
        raise TypeError("oomdoc: %s must be a path (str or os.PathLike), not %s" % (what, type(x).__name__))
    p = os.fspath(x)
    if not isinstance(p, str):
        raise TypeError("oomdoc: %s must be a text path, not %s" % (what, type(p).__name__))
    return p


def _flags(flags: Mapping[str, Any]) -> List[str]:
    """Options as CLI arguments: batch=8 -> --batch 8, chunked_loss=True ->
    --chunked-loss; False and None leave the flag out; a list joins with commas."""
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
    """Paths pass through; data in memory becomes an in-memory file (a blob)."""

    def __init__(self) -> None:
        self.blobs: List[_binding.Blob] = []

    def path_or_data(self, x: Any, kind: str) -> Any:
        if isinstance(x, (str, os.PathLike)):
            return _path(x, "a path")
        if isinstance(x, (dict, list)) and kind == "snapshot":
            # torch.cuda.memory._snapshot()'s dict (torch 1.13: its list of segments):
            # pickled as _dump_snapshot would pickle it, then read by oomdoc's own safe
            # reader. Protocol 4: what torch writes.
            return self.data(pickle.dumps(x, protocol=4), kind)
        if isinstance(x, (dict, list)):
            return self.data(json.dumps(x).encode(), kind)
        if isinstance(x, (bytes, bytearray, memoryview)):
            return self.data(bytes(x), kind)
        raise TypeError("oomdoc: cannot read a %s (give a path, a snapshot dict or bytes)" % type(x).__name__)

    def text(self, s: str, kind: str = "text") -> Any:
        if not isinstance(s, str):
            raise TypeError("oomdoc: text= takes a str, not %s" % type(s).__name__)
        return self.data(s.encode("utf-8", "surrogateescape"), kind)

    def data(self, data: bytes, kind: str) -> Any:
        placeholder = object()
        n = sum(1 for b in self.blobs if b[2].startswith("<" + kind + " ")) + 1
        self.blobs.append((placeholder, data, "<%s %d>" % (kind, n)))
        return placeholder


def _page(out: bytes, names: Mapping[str, str]) -> str:
    """A page's HTML with in-memory files named by their labels, escaped as HTML text."""
    return _binding._relabel(out.decode("utf-8", "replace"), {k: html.escape(v) for k, v in names.items()})


def _relabel_doc(doc: Any, names: Mapping[str, str]) -> Any:
    if not names:
        return doc
    if isinstance(doc, str):
        return _binding._relabel(doc, names)
    if isinstance(doc, list):
        return [_relabel_doc(x, names) for x in doc]
    if isinstance(doc, dict):
        return {k: _relabel_doc(v, names) for k, v in doc.items()}
    return doc


def _run(command: str, args: List[Any], ins: _Inputs, page_args: Optional[List[Any]] = None) -> Result:
    run = _Run(command, args, ins.blobs, page_args)
    runs = _binding.run_forms({"json": [command] + args + ["--json"]}, ins.blobs)
    o = runs["json"]
    if o.exit_code not in (0, 1):
        raise OomdocError(o.err.strip() or "oomdoc %s: exit %d" % (command, o.exit_code), o.exit_code, o.err)
    text = o.out.decode("utf-8", "replace").strip()
    try:
        doc = json.loads(text) if text else {}
    except ValueError as e:
        raise OomdocError("oomdoc %s printed no JSON document: %s" % (command, e), 70, o.err)
    text = _binding.text_from_json(command, o.out)
    if text is not None:
        text = _binding._relabel(text, runs.names)
    return Result(_relabel_doc(doc, runs.names), run, o.exit_code, o.err, text)


# ---------------------------------------------------------------------------------------
# The commands

def doctor(*inputs: Input, config: Optional[Union[PathLike, Dict[str, Any]]] = None, **flags: Any) -> Result:
    """oomdoc doctor: one diagnosis from whatever you have: snapshots (paths or
    torch.cuda.memory._snapshot() dicts), logs, step logs, nvidia-smi output, profiler
    records (paths, or bytes). config: the model's config.json (a path or a dict). flags:
    doctor's options (capacity="40GiB", gpu="h200", batch=8, fail_on="leak", ...). Its
    page (html(), Jupyter) is `oomdoc report` of the same inputs and options."""
    if not inputs:
        raise TypeError("oomdoc.doctor() needs at least one input (a snapshot, a log, ...)")
    ins = _Inputs()
    paths = [ins.path_or_data(x, "snapshot" if isinstance(x, (dict, list)) else "input") for x in inputs]
    cfg = ["--config", ins.path_or_data(config, "config")] if config is not None else []
    args = cfg + _flags(flags) + paths
    return _run("doctor", args, ins, page_args=list(args))


def snapshot(snap: Snapshot, **flags: Any) -> Result:
    """oomdoc snapshot: what a snapshot (a path, a _snapshot() dict, pickle bytes) holds;
    flags: top=5, device=0. Its page is `oomdoc report` of the snapshot."""
    ins = _Inputs()
    path = ins.path_or_data(snap, "snapshot")
    return _run("snapshot", _flags(flags) + [path], ins, page_args=[path])


def plan(model_or_config: Optional[Union[PathLike, Dict[str, Any]]] = None, *,
         model: Optional[PathLike] = None, config: Optional[Union[PathLike, Dict[str, Any]]] = None,
         **flags: Any) -> Result:
    """oomdoc plan: the memory of a training step or a generate() call, and what makes it
    fit. The model: model= a checkpoint directory (config.json and the safetensors headers),
    a Hugging Face cache folder or an ORG/NAME found in the local cache (never downloaded),
    as `oomdoc plan --model`; or config= a config.json path or dict; or neither, with
    layers=, hidden=, params=. Positionally: a dict or an existing file is a config, any
    other path or name a model. flags: batch=8, seq=2048, gpu="h200", task="infer", ..."""
    if model_or_config is not None:
        if model is not None or config is not None:
            raise TypeError("oomdoc.plan(): give the model positionally or as model=/config=, not both")
        if (isinstance(model_or_config, dict) or os.path.isfile(model_or_config)
                or os.fspath(model_or_config).endswith(".json")):
            config = model_or_config
        else:
            model = model_or_config
    if model is not None and config is not None:
        raise TypeError("oomdoc.plan(): model= and config= name the same thing: give one")
    ins = _Inputs()
    args: List[Any] = []
    if model is not None:
        args += ["--model", _path(model, "model=")]
    if config is not None:
        args += ["--config", ins.path_or_data(config, "config")]
    return _run("plan", args + _flags(flags), ins)


def triage(path: Optional[PathLike] = None, *, text: Optional[str] = None, **flags: Any) -> Result:
    """oomdoc triage: the out-of-memory reports in a log file (path) or in a text you
    have in memory (text=: an error message, a traceback, a notebook cell's output)."""
    if (path is None) == (text is None):
        raise TypeError("oomdoc.triage() takes a path or text=, one of them")
    ins = _Inputs()
    src = _path(path, "triage's path") if path is not None else ins.text(text or "")
    return _run("triage", _flags(flags) + [src], ins)


def replay(snap: Snapshot, settings: Optional[Union[str, Mapping[str, Any]]] = None,
           capacity: Optional[Union[str, int]] = None, **flags: Any) -> Result:
    """oomdoc replay: the snapshot's trace under other allocator settings
    (settings="expandable_segments:True" or a dict) and/or a cap (capacity="2GiB")."""
    if isinstance(settings, Mapping):
        settings = ",".join("%s:%s" % kv for kv in settings.items())
    ins = _Inputs()
    path = ins.path_or_data(snap, "snapshot")
    return _run("replay", _flags(dict(set=settings, capacity=capacity, **flags)) + [path], ins)


def trend(path: Optional[Union[PathLike, bytes]] = None, *, text: Optional[str] = None, **flags: Any) -> Result:
    """oomdoc trend: a per-step log or NVML series: a path, bytes, or text= (CSV or JSON
    Lines in memory); flags: capacity="80GiB", metric="reserved_bytes". Its page is
    `oomdoc report` of the series."""
    if (path is None) == (text is None):
        raise TypeError("oomdoc.trend() takes a path (or bytes) or text=, one of them")
    ins = _Inputs()
    src = ins.path_or_data(path, "series") if path is not None else ins.text(text or "", "series")
    page = _flags({"capacity": flags.get("capacity")}) + [src]
    return _run("trend", _flags(flags) + [src], ins, page_args=page)


def diff(before: Snapshot, after: Snapshot, **flags: Any) -> Result:
    """oomdoc diff between two snapshots (paths or dicts); flags: sites=10."""
    ins = _Inputs()
    a, b = ins.path_or_data(before, "snapshot"), ins.path_or_data(after, "snapshot")
    return _run("diff", _flags(flags) + [a, b], ins)


def profile(*inputs: Union[PathLike, bytes], **flags: Any) -> Result:
    """oomdoc profile: PyTorch profiler records and JAX memory profiles (paths or bytes)."""
    if not inputs:
        raise TypeError("oomdoc.profile() needs at least one profiler file")
    ins = _Inputs()
    return _run("profile", _flags(flags) + [ins.path_or_data(x, "profile") for x in inputs], ins)


def report(*inputs: Input, out: Optional[PathLike] = None,
           config: Optional[Union[PathLike, Dict[str, Any]]] = None, **flags: Any) -> Page:
    """oomdoc report: one self-contained HTML page of whatever you have (as doctor takes
    it). out: where to write it (`report -o`); the page is returned either way, and
    Jupyter shows it inline. flags: report's and doctor's options (capacity=, points=,
    top=, gpu=, batch=, ...). Raises OomdocError with report's message on failure."""
    if not inputs:
        raise TypeError("oomdoc.report() needs at least one input")
    ins = _Inputs()
    paths = [ins.path_or_data(x, "snapshot" if isinstance(x, (dict, list)) else "input") for x in inputs]
    cfg = ["--config", ins.path_or_data(config, "config")] if config is not None else []
    runs = _binding.run_forms({"html": ["report"] + cfg + _flags(flags) + paths}, ins.blobs)
    o = runs["html"]
    if o.exit_code not in (0, 1):
        raise OomdocError(o.err.strip() or "oomdoc report: exit %d" % o.exit_code, o.exit_code, o.err)
    page = _page(o.out, runs.names)
    if out is None:
        return Page(page, None)
    # Written here rather than by `report -o`, so that the file names what was given in
    # memory by its label, as the returned page does.
    dest = _path(out, "out=")
    with open(dest, "w", encoding="utf-8") as f:
        f.write(page)
    return Page(page, dest)
