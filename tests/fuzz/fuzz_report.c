/* fuzz_report.c - libFuzzer target for the HTML report on any snapshot the loader
 * accepts: the timeline, the layout at several moments and the page must come out of
 * inconsistent segments, blocks and traces (out-of-order times, frees of unknown
 * addresses, absurd sizes) without a crash, a sanitizer report or a hang: with the data
 * the page's script reads (lifetimes, stacks, allocator states) and evidence linked to
 * moments the trace may lack. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyze/timeline.h"
#include "oomdoc/snapshot.h"
#include "render/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_input *in;
    od_error err;
    od_snapshot *s = NULL;
    if (od_input_open_memory(data, size, &in, &err) != OD_OK)
        abort();
    od_status st = od_snapshot_load(in, &s, &err);
    od_input_close(in);
    if (st != OD_OK)
        return 0;
    for (size_t i = 0; i < s->n_traces; i++) {
        size_t n = s->traces[i].n_entries;
        size_t at[3] = {0, n / 2, n ? n - 1 : 0};
        od_trace *t = NULL;
        if (od_trace_build(s, s->traces[i].device, NULL, &t, &err) != OD_OK)
            continue;
        for (size_t k = 0; k < 3 && n; k++) {
            od_layout *l = NULL;
            (void)od_layout_at(t, at[k], &l, &err);
            od_layout_free(l);
        }
        od_trace_free(t);
    }
    FILE *f = fopen("/dev/null", "w");
    if (!f)
        abort();
    od_report_item item = {OD_REPORT_SNAPSHOT, "fuzz", s, NULL, 0, NULL, NULL, NULL, NULL, 0};
    /* evidence that names moments the trace may not have: the page links what exists */
    const char *ev[] = {"fuzz: OOM at entry 0", "fuzz: at entry 18446744073709551615", "fuzz: entry x at the peak",
                        "tried: x -- still OOM at entry 3", "fuzz: 2 per iteration", "fuzz", "fuzz:", ""};
    json_t *evs = json_array();
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
        json_array_append_new(evs, json_pack("{s:s,s:s}", "text", ev[i], "file", "fuzz"));
    json_t *diag = json_pack("{s:s,s:o,s:[{s:s}]}", "verdict", "capacity", "evidence", evs, "inputs", "file", "fuzz");
    od_report_input rin = {0};
    rin.items = &item;
    rin.n_items = 1;
    rin.max_points = 64;
    rin.diagnosis = diag;
    st = od_report_write(&rin, f, &err);
    if (st != OD_OK && st != OD_ERR_NOMEM && st != OD_ERR_LIMIT)
        abort();
    fclose(f);
    json_decref(diag);
    od_snapshot_free(s);
    return 0;
}
