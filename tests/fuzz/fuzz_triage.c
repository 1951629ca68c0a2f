/* fuzz_triage.c - od_triage_parse on arbitrary bytes: never crash, never read out of
 * bounds; every report it returns must be classified consistently; and the stream (which
 * keeps only the lines that can matter), fed in chunks of a size the input picks, finds
 * what the scan of the whole text finds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/advice.h"
#include "read/triage/triage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_reports(const od_oom_report *a, const od_oom_report *b)
{
    return a->framework == b->framework && a->kind == b->kind && !strcmp(a->library, b->library) &&
           a->offset == b->offset && a->line == b->line && a->have == b->have &&
           a->requested_bytes == b->requested_bytes && a->capacity_bytes == b->capacity_bytes &&
           a->free_bytes == b->free_bytes && a->allowed_bytes == b->allowed_bytes &&
           a->allocated_bytes == b->allocated_bytes && a->reserved_unallocated_bytes == b->reserved_unallocated_bytes &&
           a->process_bytes == b->process_bytes && a->n_other == b->n_other && a->occurrences == b->occurrences &&
           a->verdict == b->verdict && a->smi_processes == b->smi_processes &&
           a->have_torch_range == b->have_torch_range &&
           od_torch_version_cmp(a->torch_range.lower, b->torch_range.lower) == 0 &&
           od_torch_version_cmp(a->torch_range.upper, b->torch_range.upper) == 0;
}

/* The stream's result equals the whole-text scan's. */
static void check_stream(const uint8_t *data, size_t size, const od_triage *whole)
{
    size_t chunk = size ? 1 + data[0] % 64 : 1;
    od_triage_stream *ts = NULL;
    od_triage *t = NULL;
    od_error err;
    if (od_triage_stream_new(&ts, &err) != OD_OK)
        abort();
    for (size_t i = 0; i < size; i += chunk)
        if (od_triage_stream_feed(ts, data + i, size - i < chunk ? size - i : chunk, &err) != OD_OK)
            abort();
    if (od_triage_stream_finish(ts, &t, &err) != OD_OK)
        abort();
    od_triage_stream_free(ts);
    if (t->n_reports != whole->n_reports || t->n_summaries != whole->n_summaries || t->n_gpus != whole->n_gpus ||
        t->n_procs != whole->n_procs || !t->stats != !whole->stats || t->smi_verdict != whole->smi_verdict ||
        (t->stats && memcmp(t->stats, whole->stats, sizeof *t->stats) != 0))
        abort();
    for (size_t i = 0; i < t->n_reports; i++)
        if (!same_reports(&t->reports[i], &whole->reports[i]))
            abort();
    for (size_t i = 0; i < t->n_summaries; i++)
        if (t->summaries[i].offset != whole->summaries[i].offset || t->summaries[i].line != whole->summaries[i].line ||
            t->summaries[i].ooms != whole->summaries[i].ooms)
            abort();
    for (size_t i = 0; i < t->n_gpus; i++)
        if (t->gpus[i].total_bytes != whole->gpus[i].total_bytes || t->gpus[i].used_bytes != whole->gpus[i].used_bytes ||
            t->gpus[i].index != whole->gpus[i].index)
            abort();
    for (size_t i = 0; i < t->n_procs; i++)
        if (t->procs[i].pid != whole->procs[i].pid || t->procs[i].bytes != whole->procs[i].bytes)
            abort();
    od_triage_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_triage *t = NULL;
    od_error err;
    if (od_triage_parse_whole((const char *)data, size, &t, &err) != OD_OK)
        return 0;
    check_stream(data, size, t);
    for (size_t i = 0; i < t->n_reports; i++) {
        od_oom_report *r = &t->reports[i];
        od_oom_verdict v = r->verdict;
        od_triage_classify(r);
        if (r->verdict != v)
            abort();
        od_advice h[8];
        size_t nh = od_advice_for_report(r, h, 8);
        if (nh > 8)
            abort();
        for (size_t k = 0; k < nh; k++)
            if (!od_advice_get(h[k])->action)
                abort();
    }
    od_triage_free(t);
    return 0;
}
