#!/bin/sh
# python_notebook.sh OOMDOC - examples/oomdoc.ipynb executed as a user would
# (`jupyter nbconvert --execute`, Debian's jupyter and ipykernel; the package from python/,
# the library built beside OOMDOC): no cell fails; the doctor cell shows the real report
# page (an iframe of `oomdoc report`'s output), the cell with gpu= the page or report's
# own error, plan and triage tables, the capture cell the warning of a machine without
# CUDA. Then headless Chromium loads the HTML export: each page's iframe has been resized
# to its content (its height is no longer the estimate it started with). Without jupyter
# the suite says so and passes.
dir=$(dirname "$1"); [ "$dir" = . ] && dir=build/rel
lib=$dir/liboomdoc.so.0
if ! [ -f "$lib" ] || nm -D "$lib" 2>/dev/null | grep -q __asan_init; then
    lib=build/rel/liboomdoc.so.0  # a sanitizer build's library cannot load into python
fi
if ! command -v jupyter >/dev/null 2>&1 || ! jupyter nbconvert --version >/dev/null 2>&1; then
    echo "python_notebook: no jupyter nbconvert: skipped"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
here=$(pwd)
(cd examples && PYTHONPATH="$here/python" OOMDOC_LIBRARY="$here/$lib" timeout 300 \
    jupyter nbconvert --to notebook --execute oomdoc.ipynb --output-dir "$tmp" --output run.ipynb) \
    >"$tmp/log" 2>&1 || { tail -20 "$tmp/log"; echo "FAIL python_notebook: nbconvert --execute"; exit 1; }
python3 - "$tmp/run.ipynb" "$here/$dir/oomdoc" <<'PY' || exit 1
import json, subprocess, sys
nb = json.load(open(sys.argv[1]))
cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
fail = []
def html_of(c):
    return "".join("".join(o.get("data", {}).get("text/html", "")) for o in c.get("outputs", []))
for i, c in enumerate(cells):
    for o in c.get("outputs", []):
        if o["output_type"] == "error":
            fail.append("cell %d raised %s: %s" % (i + 1, o["ename"], o["evalue"]))
src = ["".join(c["source"]) for c in cells]
def cell(text):
    return next(c for c, s in zip(cells, src) if text in s)

doctor = html_of(cell('r = oomdoc.doctor('))
if not doctor.startswith("<iframe srcdoc=") or "oomdoc report" not in doctor:
    fail.append("the doctor cell shows no report page: %r" % doctor[:120])
gpu = html_of(next(c for c, s in zip(cells, src) if "oomdoc.doctor(" in s and "gpu=" in s))
r = subprocess.run([sys.argv[2], "report", "--gpu", "h200", "snap_train_oom.pickle", "snap_train_oom.log"],
                   cwd="examples", capture_output=True, text=True)
if r.returncode in (0, 1):
    ok = gpu.startswith("<iframe srcdoc=")
else:
    import html
    ok = "oomdoc report failed (exit %d)" % r.returncode in gpu and html.escape(r.stderr.strip()) in gpu
if not ok:
    fail.append("the gpu= cell shows neither the page nor report's error: %r" % gpu[:200])
for text in ("oomdoc.plan(", "oomdoc.triage("):
    if "<table>" not in html_of(cell(text)):
        fail.append("no table in the %s cell" % text)
warn = "".join("".join(o.get("text", "")) for o in cell("oomdoc.record(").get("outputs", []) if o.get("name") == "stderr")
if "CUDA is not available" not in warn:
    fail.append("the capture cell's warning: %r" % warn)
for f in fail:
    print("FAIL python_notebook: " + f)
sys.exit(1 if fail else 0)
PY
(cd "$tmp" && jupyter nbconvert --to html run.ipynb --output page) >>"$tmp/log" 2>&1 ||
    { echo "FAIL python_notebook: nbconvert --to html"; exit 1; }
browser=$(command -v chromium || command -v chromium-browser)
if [ -n "$browser" ]; then
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --window-size=1200,3000 --virtual-time-budget=5000 \
        --dump-dom "file://$tmp/page.html" 2>/dev/null >"$tmp/dom.html"
    python3 - "$tmp/page.html" "$tmp/dom.html" <<'PY' || exit 1
import re, sys
est = [int(h) for h in re.findall(r'style="width:100%;height:(\d+)px;border:0" title="oomdoc report"', open(sys.argv[1]).read())]
got = [int(h) for h in re.findall(r'style="width: 100%; height: (\d+)px; border: 0px;" title="oomdoc report"', open(sys.argv[2]).read())]
if not est or len(got) != len(est) or any(g == e or g < 600 for g, e in zip(got, est)):
    sys.exit("FAIL python_notebook: iframe heights estimated %s, after load %s" % (est, got))
print("python_notebook: executed; iframes fitted to their pages: estimated %s px, measured %s px" % (est, got))
PY
else
    echo "python_notebook: executed (no chromium: the iframes' fitted height not checked)"
fi
