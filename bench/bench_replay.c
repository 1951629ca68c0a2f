/* bench_replay.c SNAPSHOT [ROUNDS] - replay speed of the allocator model.
 * Loads the snapshot once, then replays its trace ROUNDS times (default 5) and prints
 * events/s (per CPU second of this process) next to a baseline measured in the same run: a naive live-bytes tracker (one
 * hash-map insert/erase per event, no allocator policy), i.e. the cost of just walking the
 * trace with per-address bookkeeping. Target: >= 5 million events/s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/replay.h"
#include "oomdoc/snapshot.h"

/* CPU time of this process: the machine is shared, and time spent waiting for a core
 * says nothing about the replay. Wall time is printed too. */
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double wall_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* baseline: open-addressing address -> size map, live bytes and their peak */
static uint64_t baseline(const od_device_trace *tr, uint64_t *peak)
{
    size_t cap = 1 << 20, mask = cap - 1;
    uint64_t *k = calloc(cap, sizeof *k), *v = calloc(cap, sizeof *v);
    uint64_t live = 0, n = 0;
    *peak = 0;
    for (size_t i = 0; i < tr->n_entries; i++) {
        od_trace_entry e_v = od_trace_at(tr, i);
        const od_trace_entry *e = &e_v;
        size_t j = (size_t)((e->addr * 0x9e3779b97f4a7c15ull) >> 40) & mask;
        if (e->action == OD_ACT_ALLOC) {
            while (k[j] && k[j] != e->addr) j = (j + 1) & mask;
            k[j] = e->addr;
            v[j] = e->size;
            live += e->size;
            if (live > *peak) *peak = live;
            n++;
        } else if (e->action == OD_ACT_FREE_COMPLETED || e->action == OD_ACT_FREE_REQUESTED) {
            while (k[j] && k[j] != e->addr) j = (j + 1) & mask;
            if (k[j] && e->action == OD_ACT_FREE_COMPLETED) {
                live -= v[j];
                /* tombstone-free delete is not needed for a baseline: mark size 0 */
                v[j] = 0;
            }
            n++;
        }
    }
    free(k);
    free(v);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_replay SNAPSHOT [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (rounds < 1) rounds = 1;
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 3; }
    od_input *in = NULL;
    od_snapshot *snap = NULL;
    od_error err;
    if (od_input_open_file(f, &in, &err) || od_snapshot_load(in, &snap, &err)) {
        fprintf(stderr, "bench_replay: %s: %s\n", argv[1], err.msg);
        return 3;
    }
    od_input_close(in);
    fclose(f);

    od_replay_opts o;
    memset(&o, 0, sizeof o);
    od_replay_config_from_snapshot(snap, &o.cfg);
    o.device = -1;
    od_replay_result r;
    uint64_t events = 0;
    double w0 = wall_now(), t0 = cpu_now();
    for (int i = 0; i < rounds; i++) {
        if (od_replay_snapshot(snap, &o, &r, &err)) {
            fprintf(stderr, "bench_replay: %s\n", err.msg);
            return 70;
        }
        events += r.events_replayed;
    }
    double t_model = cpu_now() - t0, w_model = wall_now() - w0;

    uint64_t bevents = 0, bpeak = 0;
    t0 = cpu_now();
    for (int i = 0; i < rounds; i++) bevents += baseline(&snap->traces[0], &bpeak);
    double t_base = cpu_now() - t0;

    double eps = (double)events / t_model, beps = (double)bevents / t_base;
    printf("replay %s: %d rounds, %llu events in %.3f s CPU (%.3f s wall)\n", argv[1], rounds,
           (unsigned long long)events, t_model, w_model);
    printf("  allocator model : %8.2f million events/s per CPU second, %.2f by the wall clock "
           "(peak allocated %llu bytes)\n", eps / 1e6, (double)events / w_model / 1e6,
           (unsigned long long)r.stats.peak_allocated_bytes);
    printf("  baseline (naive live-bytes hash map, no policy): %8.2f million events/s\n", beps / 1e6);
    printf("  model / baseline: %.2fx; target >= 5 million events/s: %s\n", eps / beps,
           eps >= 5e6 ? "met" : "NOT met");
    od_snapshot_free(snap);
    return eps >= 5e6 ? 0 : 1;
}
