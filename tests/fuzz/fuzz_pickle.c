/* fuzz_pickle.c - libFuzzer target for the pickle reader, the snapshot loader (held and
 * streamed) and the summary built on it. Any input must end in OD_OK or a clean error: never a crash, a
 * sanitizer report, a hang or unbounded memory. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyze/summary.h"
#include "oomdoc/snapshot.h"
#include "read/pickle.h"
#include "read/tracepass.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_or_abort(const od_trace_entry *a, const od_trace_entry *b)
{
    if (a->addr != b->addr || a->size != b->size || a->time_us != b->time_us || a->stream != b->stream ||
        a->device_free != b->device_free || a->action != b->action || b->stack != 0)
        abort();
}

static void streamed_matches(const od_snapshot *held, const uint8_t *data, size_t size, int from_file)
{
    FILE *f = NULL;
    od_input *in = NULL;
    od_error err;
    if (from_file) {
        if (!(f = tmpfile()))
            return;
        if (fwrite(data, 1, size, f) != size || fflush(f) || fseek(f, 0, SEEK_SET) ||
            od_input_open_file(f, &in, &err) != OD_OK) {
            fclose(f);
            return;
        }
    } else if (od_input_open_memory(data, size, &in, &err) != OD_OK) {
        abort();
    }
    od_snapshot *s = NULL;
    if (od_snapshot_load_streamed(in, &s, &err) == OD_OK) {
        if (s->n_traces != held->n_traces)
            abort();
        od_trace_entry buf[64];
        for (size_t d = 0; d < s->n_traces; d++) {
            od_trace_pass *p = NULL;
            if (od_trace_pass_open(s, (int64_t)d, &p, &err) != OD_OK)
                continue; /* out of memory */
            size_t i = 0, k;
            while ((k = od_trace_pass_read(p, buf, 64)) > 0)
                for (size_t j = 0; j < k; j++, i++)
                    if (i >= held->traces[d].n_entries)
                        abort();
                    else {
                        od_trace_entry e = od_trace_at(&held->traces[d], i);
                        same_or_abort(&e, &buf[j]);
                    }
            if (od_trace_pass_status(p, &err) == OD_OK && i != held->traces[d].n_entries)
                abort();
            od_trace_pass_close(p);
        }
        od_snapshot_free(s);
    } else if (err.status != OD_ERR_LIMIT && err.status != OD_ERR_NOMEM) {
        abort(); /* what loads whole streams, unless it refers back to what streaming lets go */
    }
    od_input_close(in);
    if (f)
        fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_input *in;
    od_error err;
    if (od_input_open_memory(data, size, &in, &err) != OD_OK)
        abort();
    od_ptree *t = NULL;
    od_pickle_options opt = {0};
    opt.max_string_bytes = 1 << 20;
    if (od_pickle_load(in, &opt, &t, &err) == OD_OK) {
        /* Walk the tree's top level through the accessors. */
        od_pv root = od_ptree_root(t);
        size_t n = od_pv_len(t, root);
        for (size_t i = 0; i < n && i < 64; i++) {
            od_pv v = od_pv_typeof(t, root) == OD_PV_DICT ? od_pv_dict_value(t, root, i) : od_pv_item(t, root, i);
            int64_t x;
            double d;
            (void)od_pv_get_i64(t, v, &x);
            (void)od_pv_get_f64(t, v, &d);
            (void)od_pv_str(t, v, NULL);
        }
        od_ptree_free(t);
    } else if (!err.has_offset && err.status != OD_ERR_NOMEM) {
        abort(); /* every parse error names its byte offset */
    }
    od_input_close(in);

    if (od_input_open_memory(data, size, &in, &err) != OD_OK)
        abort();
    od_snapshot *s = NULL;
    if (od_snapshot_load(in, &s, &err) == OD_OK) {
        od_summary *sum = NULL;
        if (od_summarize(s, &sum, &err) == OD_OK)
            od_summary_free(sum);
        /* Streamed from memory (a compact stream) and from a file (read again): a clean
         * result either way, and where it loads, the held trace's entries, stacks aside. */
        streamed_matches(s, data, size, 0);
        streamed_matches(s, data, size, 1);
        od_snapshot_free(s);
    }
    od_input_close(in);
    return 0;
}
