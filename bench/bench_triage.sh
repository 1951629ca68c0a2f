#!/bin/sh
# bench_triage.sh [OOMDOC] - triage's CPU on a 200 MB training log against what a user would run
# instead, measured in the same run (median of 5 each, user+sys seconds, interleaved):
#   grep -ciE 'out of memory|resource.?exhausted|failed to allocate|cannot allocate|oom'
# and its peak RSS on two inputs that must not be kept: 200 MB of a log with "lr=3.0e-9" on every
# line, and 30 s of /dev/urandom. Budgets: triage <= 3x grep's CPU; RSS <= 32 MiB on both.
# SIZE_MB (default 200) and URANDOM_S (default 30) scale it down for a quick look.
OOMDOC=${1:-./oomdoc}
SIZE_MB=${SIZE_MB:-200}
URANDOM_S=${URANDOM_S:-30}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

# A training log: timestamped step lines, an OOM message at the end.
python3 - "$tmp/train.log" "$tmp/e9.log" "$SIZE_MB" <<'PY'
import random, sys
random.seed(7)
train, e9, size = sys.argv[1], sys.argv[2], int(sys.argv[3]) * 1000 * 1000
oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.08 GiB memory in use. "
       "Of the allocated memory 75.50 GiB is allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but "
       "unallocated.\n")
for path, lr in ((train, None), (e9, "3.0e-9")):
    with open(path, "w") as f:
        n, i, chunk = 0, 0, []
        while n < size:
            line = ("2024-05-01 12:%02d:%02d,%03d INFO [rank%d] epoch %d step %d loss %.4f lr %s tokens/s %d "
                    "grad_norm %.3f mem 41.2GiB\n" % (i % 60, (i // 60) % 60, i % 1000, i % 8, i // 100000, i,
                                                     random.random(), lr or "3.0e-%d" % (5 + i % 4),
                                                     random.randint(1000, 20000), random.random()))
            chunk.append(line)
            n += len(line)
            i += 1
            if len(chunk) == 10000:
                f.write("".join(chunk))
                chunk = []
        f.write("".join(chunk))
        if path == train:
            f.write(oom)
PY

# seconds of user+sys CPU and peak RSS (KiB) of one run
run() {
    /usr/bin/time -f "%U %S %M" -o "$tmp/t" "$@" >/dev/null 2>&1
    tail -n 1 "$tmp/t" | awk '{ printf "%.3f %d\n", $1 + $2, $3 }' # (a first line says a non-zero exit)
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: >"$tmp/g"
: >"$tmp/o"
for i in 1 2 3 4 5; do
    run grep -ciE 'out of memory|resource.?exhausted|failed to allocate|cannot allocate|oom' "$tmp/train.log" |
        cut -d' ' -f1 >>"$tmp/g"
    run "$OOMDOC" triage "$tmp/train.log" | cut -d' ' -f1 >>"$tmp/o"
done
g=$(median <"$tmp/g")
o=$(median <"$tmp/o")
ratio=$(awk -v o="$o" -v g="$g" 'BEGIN { printf "%.2f", (g > 0 ? o / g : 0) }')
printf 'bench_triage: %d MB training log: triage %.3f s CPU, grep -ciE %.3f s (median of 5): %sx (budget 3x)\n' \
    "$SIZE_MB" "$o" "$g" "$ratio"
awk -v r="$ratio" 'BEGIN { exit !(r > 3) }' && { echo "FAIL bench_triage: over 3x grep"; status=1; }

rss=$(run "$OOMDOC" triage "$tmp/e9.log" | cut -d' ' -f2)
printf 'bench_triage: %d MB of lines with lr=3.0e-9: peak RSS %d KiB (budget 32 MiB)\n' "$SIZE_MB" "$rss"
[ "$rss" -gt 32768 ] && { echo "FAIL bench_triage: the log was kept"; status=1; }

/usr/bin/time -f "%M" -o "$tmp/t" timeout "$URANDOM_S" "$OOMDOC" triage /dev/urandom >/dev/null 2>&1
rss=$(tail -n 1 "$tmp/t" | tr -cd 0-9)
printf 'bench_triage: %d s of /dev/urandom: peak RSS %d KiB (budget 32 MiB)\n' "$URANDOM_S" "$rss"
[ "${rss:-0}" -gt 32768 ] && { echo "FAIL bench_triage: random bytes were kept"; status=1; }
exit $status
