#!/bin/sh
# run_all: release only (see tests/run_all.sh)
# report_browser.sh OOMDOC - `oomdoc report` pages rendered by a real browser (headless
# Chromium, Debian package `chromium`) with networking made impossible:
#   - the pages hold nothing that fetches (no URL, src=, href=, url(), @import, no
#     <link>/<img>/<iframe>/<object>/<embed>); inline <script> is allowed;
#   - every request the browser makes goes to a local listener posing as the proxy (and
#     host names resolve to nothing), so any fetch is seen: none may happen while the
#     reports load, and a control page that does fetch must be seen (the detector works);
#   - in the rendered DOM every SVG plot has a size and visible shapes;
#   - the interactive page (tests/browser/report_test.js, puppeteer-core driving the same
#     Chromium, every request refused and counted): hover, pin, zoom and pan the timeline
#     of snap_train_oom and of the 1 M-entry trace, the allocator-state slider at the peak
#     against `oomdoc snapshot --json`, an evidence link, the icicle, the compare of two
#     snapshots, and the page with JavaScript off;
#   - screenshots are saved next to the binary (BUILD/report-shots/NAME.png).
# Skips (exit 0, with a message) only when no Chromium is installed: .ci/run installs it.
OOMDOC=$1
case "$OOMDOC" in /*) ;; *) OOMDOC="$(pwd)/$OOMDOC" ;; esac
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
    echo "SKIP report_browser: no chromium installed (apt-get install chromium; .ci/run does it)"
    exit 0
fi
command -v python3 >/dev/null || { echo "FAIL report_browser: python3 is needed"; exit 1; }
D=tests/data/snapshots
SHOTS=$(dirname "$OOMDOC")/report-shots
mkdir -p "$SHOTS"
tmp=$(mktemp -d)
listener_pid=""
cleanup() {
    [ -n "$listener_pid" ] && kill "$listener_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
bad() { echo "FAIL report_browser: $*"; fail=1; }

# 1. The reports: each fixture alone, one with every input kind, and the 1M-entry trace.
gen() { # NAME FILE...
    name=$1
    shift
    if ! "$OOMDOC" report "$@" -o "$tmp/$name.html"; then bad "oomdoc report $* failed"; fi
}
gen frag_default $D/frag_default.pickle
gen snap_train_oom $D/snap_train_oom.pickle
gen leak_eval_no_grad $D/leak_eval_no_grad.pickle
gen infer_wrapped $D/snap_infer_llama.pickle.gz
gen mixed $D/leak_eval_no_grad.pickle tests/data/extracted/leak_eval_no_grad_steps.csv \
    tests/data/extracted/train_oom_log.txt
gen long $D/snap_train_long.pickle.gz
gen compare $D/frag_default.pickle $D/frag_expandable.pickle
gen cudagraph $D/snap_cudagraph.pickle
gen profile tests/data/profiler/torch_memory_timeline.json tests/data/profiler/torch_profiler_trace.json.gz \
    tests/data/profiler/jax_device_memory.prof
size=$(wc -c <"$tmp/long.html")
echo "snap_train_long report: $size bytes"
[ "$size" -le 5242880 ] || bad "snap_train_long report is $size bytes (limit 5 MiB)"

# 2. Nothing in the markup that a browser would fetch.
for f in "$tmp"/*.html; do
    if grep -Eio 'https?:|ftp:|//[a-z0-9.-]+\.[a-z]{2,}/|src=|href=|url\(|@import|<script[^>]*src|<link|<img|<iframe|<object|<embed' "$f" | head -n 3 | grep .; then
        bad "$(basename "$f") refers to something a browser would fetch"
    fi
done

# 3. A listener that records every connection the browser makes.
cat >"$tmp/listen.py" <<'PY'
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(64)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
log = sys.argv[2]
def serve(c):
    c.settimeout(2)
    try: data = c.recv(300)
    except Exception: data = b""
    with open(log, "a") as f: f.write(data.split(b"\r\n")[0].decode("latin-1") + "\n")
    try: c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    except Exception: pass
    c.close()
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
: >"$tmp/requests.log"
python3 "$tmp/listen.py" "$tmp/port" "$tmp/requests.log" &
listener_pid=$!
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
port=$(cat "$tmp/port")
[ -n "$port" ] || { bad "the listener did not start"; exit 1; }

browse() { # chromium with networking routed to the listener; extra arguments follow
    timeout 60 "$CHROME" --headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check \
        --disable-background-networking --disable-component-update --disable-sync --disable-default-apps \
        --disable-extensions --disable-domain-reliability --disable-client-side-phishing-detection \
        --metrics-recording-only --no-pings --disable-breakpad --mute-audio --hide-scrollbars \
        --user-data-dir="$tmp/profile" --proxy-server="http://127.0.0.1:$port" --proxy-bypass-list='<-loopback>' \
        --host-resolver-rules='MAP * ~NOTFOUND, EXCLUDE 127.0.0.1' "$@" 2>>"$tmp/chromium.err"
}

# 4. All reports in one page of frames; a script in that page (not in the reports)
#    measures every SVG and its drawn shapes once each report has loaded.
names="frag_default snap_train_oom leak_eval_no_grad infer_wrapped mixed long profile compare"
{
    echo '<!DOCTYPE html><html><body><pre id="out">pending</pre>'
    for n in $names; do echo "<iframe data-name=\"$n\" src=\"$n.html\" style=\"width:1100px;height:900px\"></iframe>"; done
    cat <<'JS'
<script>
// The window's load event comes after every frame has loaded.
window.addEventListener('load', function () {
  var lines = [];
  document.querySelectorAll('iframe').forEach(function (fr) {
    var d = fr.contentDocument;
    d.querySelectorAll('svg').forEach(function (s) {
      var r = s.getBoundingClientRect(), shapes = 0;
      s.querySelectorAll('path,rect,line,circle').forEach(function (e) {
        var b = e.getBBox(); if (b.width > 0 || b.height > 0) shapes++;
      });
      lines.push(fr.dataset.name + ' ' + s.id.replace(/-[0-9]+$/, '') + ' ' + Math.round(r.width) + ' ' +
                 Math.round(r.height) + ' ' + shapes);
    });
    lines.push(fr.dataset.name + ' text ' + d.body.innerText.length);
  });
  document.getElementById('out').textContent = lines.join('\n');
});
</script></body></html>
JS
} >"$tmp/harness.html"
browse --allow-file-access-from-files --virtual-time-budget=10000 --dump-dom "file://$tmp/harness.html" >"$tmp/dom.html"
python3 - "$tmp/dom.html" $names <<'PY' || fail=1
import re, sys, html
dom = open(sys.argv[1]).read()
m = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
if not m or m.group(1).strip() == "pending":
    print("FAIL report_browser: the rendered DOM has no measurements"); sys.exit(1)
rows = [l.split() for l in html.unescape(m.group(1)).strip().splitlines()]
# plots each report must show, with the fewest shapes that count as non-empty
want = {"frag_default": {"timeline": 4, "segments": 50},
        "snap_train_oom": {"timeline": 4, "segments": 50},
        "leak_eval_no_grad": {"timeline": 6, "iterations": 16, "segments": 50},
        "infer_wrapped": {"timeline": 3, "segments": 3},
        "mixed": {"timeline": 6, "iterations": 16, "segments": 50, "series": 2},
        "long": {"timeline": 6, "iterations": 100, "segments": 50},
        # profiler records: per-category timeline and the trace, phases shaded (rects)
        "profile": {"profile": 12},
        # two snapshots: both timelines, and their live bytes on one axis
        "compare": {"timeline": 4, "segments": 50, "compare": 2}}
ok = True
for name in sys.argv[2:]:
    got = {}
    for r in rows:
        if r[0] == name and r[1] != "text":
            got.setdefault(r[1], []).append((int(r[2]), int(r[3]), int(r[4])))
    text = [int(r[2]) for r in rows if r[0] == name and r[1] == "text"]
    if not text or text[0] < 200:
        print("FAIL report_browser: %s: page text missing" % name); ok = False
    for plot, least in want[name].items():
        if plot not in got:
            print("FAIL report_browser: %s: no %s plot in the rendered DOM" % (name, plot)); ok = False; continue
        for w, h, shapes in got[plot]:
            if w < 300 or h < 50 or shapes < least:
                print("FAIL report_browser: %s: %s plot %dx%d with %d shapes (want >= %d)" % (name, plot, w, h, shapes, least))
                ok = False
    if "segments" in want[name] and len(got.get("segments", [])) < 2:  # at the peak and at the end
        print("FAIL report_browser: %s: %d segment maps, want 2" % (name, len(got.get("segments", [])))); ok = False
    print("%s: %s" % (name, ", ".join("%s %dx%d %d shapes" % (p, *v[0]) for p, v in sorted(got.items()))))
sys.exit(0 if ok else 1)
PY

# 5. Screenshots, light and dark.
for n in frag_default snap_train_oom leak_eval_no_grad profile; do
    rm -f "$SHOTS/$n.png"
    browse --window-size=1100,3400 --screenshot="$SHOTS/$n.png" "file://$tmp/$n.html" >/dev/null
    if [ "$(head -c 4 "$SHOTS/$n.png" 2>/dev/null | od -An -c | tr -d ' ')" != "211PNG" ] ||
        [ "$(wc -c <"$SHOTS/$n.png")" -lt 20000 ]; then
        bad "no screenshot of $n"
    fi
done
browse --window-size=1100,3400 --force-dark-mode --blink-settings=preferredColorScheme=0 \
    --screenshot="$SHOTS/frag_default_dark.png" "file://$tmp/frag_default.html" >/dev/null
echo "screenshots in $SHOTS"

# 6. No request while the reports loaded; then prove the detector sees one. Chromium's
#    own services (clock sync, component updater, sign-in) call home even with background
#    networking disabled: those hosts, and only those, are not the page's doing.
sleep 0.5
own='^(GET|POST|HEAD|CONNECT) (http://)?(clients[0-9]*\.google\.com|update\.googleapis\.com|accounts\.google\.com|[a-z0-9-]+\.gvt1\.com|optimizationguide-pa\.googleapis\.com|safebrowsing\.googleapis\.com|content-autofill\.googleapis\.com)[:/]'
if grep -Ev "$own" "$tmp/requests.log" | grep -q .; then
    bad "the browser made requests while showing the reports:"
    grep -Ev "$own" "$tmp/requests.log" | head -n 5
fi
printf '<!DOCTYPE html><img src="http://probe.invalid/x.png"><p>probe</p>\n' >"$tmp/control.html"
browse --virtual-time-budget=3000 --dump-dom "file://$tmp/control.html" >/dev/null
sleep 0.5
grep -q 'probe\.invalid' "$tmp/requests.log" || bad "the request detector did not see the control page's fetch"

# 7. The interactive page, driven by puppeteer-core (installed by .ci/run: npm ci in
#    tests/browser). Screenshots of each state go beside the others.
if [ -d tests/browser/node_modules/puppeteer-core ] && command -v node >/dev/null; then
    timeout 300 node tests/browser/report_test.js "$tmp" "$SHOTS" "$OOMDOC" "$(pwd)/$D" || bad "the interactive page (report_test.js) failed"
else
    echo "SKIP report_browser interactive part: puppeteer-core is not installed (npm ci in tests/browser; .ci/run does it)"
fi

[ "$fail" -eq 0 ] && echo "report_browser: ok"
exit "$fail"
