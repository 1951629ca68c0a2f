#!/usr/bin/env python3
"""Make a longer allocator snapshot from the real 1 000 000-event one, for the scaling
benchmark: the steady-state span of its trace is repeated with shifted times and the same
addresses, and the file is written with pickle.dump as torch's _dump_snapshot writes it.

The span [a, b) is chosen so that its allocs, free_requesteds and free_completeds cancel
exactly (the same blocks in the same states at a and at b), so every copy leaves the
allocator where the original left it: a replay of the longer trace meets the same states,
and the real trace's remainder and final segments follow unchanged. External annotations
inside the span (Optimizer.step, ...) are repeated with it; everything after it is shifted.

Usage: gen_long.py SRC.pickle[.gz] EVENTS OUT.pickle
EVENTS is a goal: the copies are whole spans, so the result is the nearest whole number
of copies (printed)."""
import bisect
import gzip
import pickle
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return pickle.load(f)


def state_sums(entries):
    """H[i]: the sum of the signed state contributions of entries[0..i), mod 2^64. Two
    positions with equal sums hold the same blocks in the same states (up to a hash
    collision, which the caller checks away by replaying the span)."""
    mask = (1 << 64) - 1
    sums = [0] * (len(entries) + 1)
    h = 0
    for i, e in enumerate(entries):
        a = e["action"]
        key = hash((e["addr"], e["size"], e.get("stream", 0)))
        if a == "alloc":
            h += hash((key, "live"))
        elif a == "free_requested":
            h += hash((key, "pending")) - hash((key, "live"))
        elif a == "free_completed":
            h -= hash((key, "pending"))
        elif a in ("segment_alloc", "segment_map"):
            h += hash((key, "segment"))
        elif a in ("segment_free", "segment_unmap"):
            h -= hash((key, "segment"))
        h &= mask
        sums[i + 1] = h
    return sums


def steady_span(entries):
    """The shortest [a, b) of at least a hundredth of the trace, starting after its first
    tenth, whose entries cancel (equal state sums at a and b). A short span lets the copies
    come close to any goal; a hundredth holds a whole training step or more."""
    sums = state_sums(entries)
    where = {}
    for i, h in enumerate(sums):
        where.setdefault(h, []).append(i)
    n = len(entries)
    least = max(1000, n // 100)
    best = None
    for a in range(n // 10, n // 2):
        ks = where[sums[a]]
        j = bisect.bisect_left(ks, a + least)
        if j < len(ks) and (best is None or ks[j] - a < best[1] - best[0]):
            best = (a, ks[j])
            if ks[j] - a == least:
                break
    if best is None:
        sys.exit("gen_long: no steady-state span found in the trace")
    return best


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, goal, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    snap = load(src)
    traces = snap["device_traces"]
    dev = max(range(len(traces)), key=lambda d: len(traces[d]))
    entries = traces[dev]
    a, b = steady_span(entries)
    span = b - a
    copies = max(0, round((goal - len(entries)) / span))
    # Each copy starts one span duration (and one microsecond) after the previous one.
    shift = entries[b]["time_us"] - entries[a]["time_us"] + 1
    t_a, t_b = entries[a]["time_us"], entries[b]["time_us"]

    def moved(e, dt):
        c = dict(e)
        c["time_us"] = e["time_us"] + dt
        if "frames" in e:
            c["frames"] = list(e["frames"])
        return c

    longer = entries[:b]
    for k in range(1, copies + 1):
        longer.extend(moved(e, k * shift) for e in entries[a:b])
    longer.extend(moved(e, copies * shift) for e in entries[b:])
    traces[dev] = longer

    notes = snap.get("external_annotations")
    if isinstance(notes, list) and copies:
        before = [x for x in notes if x.get("time_us", 0) < t_b]
        inside = [x for x in notes if t_a <= x.get("time_us", 0) < t_b]
        after = [x for x in notes if x.get("time_us", 0) >= t_b]
        for k in range(1, copies + 1):
            before.extend(dict(x, time_us=x["time_us"] + k * shift) for x in inside)
        before.extend(dict(x, time_us=x["time_us"] + copies * shift) for x in after)
        snap["external_annotations"] = before

    with open(out, "wb") as f:
        pickle.dump(snap, f)
    print("%s: %d events (span [%d, %d) of %d entries, %d copies)" %
          (out, len(longer), a, b, span, copies))


if __name__ == "__main__":
    main()
