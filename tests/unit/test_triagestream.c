/* test_triagestream.c - the triage stream (which keeps only the lines that can matter)
 * against the scan of the whole text, on every text fixture: fed whole, fed in chunks of
 * 1, 7 and 4093 bytes, and with filler lines between every line and around the text, so
 * that each fixture line stands alone in the stream's window and every phrase the scanner
 * acts on must be one the stream keeps. Also the line-break rule, and what a log's bulk
 * costs. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "slurp.h"

#include "base/lines.h"
#include "read/triage/triage.h"

static const char *const dirs[] = {
    "tests/data/messages", "tests/data/messages/real", "tests/data/extracted", "tests/data/measured", "tests/data/profiler",
    "tests/data/synthetic", "tests/fuzz/corpus/triage", NULL,
};

#define FILLER "epoch 3 step 1200 loss 0.4321 lr 2.0e-05 tokens/s 12345 grad_norm 0.87\n"

static void same_report(const char *what, const od_oom_report *a, const od_oom_report *b)
{
    int same = a->framework == b->framework && a->kind == b->kind && !strcmp(a->library, b->library) &&
               a->offset == b->offset && a->line == b->line && a->have == b->have && a->device == b->device &&
               a->requested_bytes == b->requested_bytes && a->capacity_bytes == b->capacity_bytes &&
               a->free_bytes == b->free_bytes && a->allowed_bytes == b->allowed_bytes &&
               a->allocated_bytes == b->allocated_bytes &&
               a->reserved_unallocated_bytes == b->reserved_unallocated_bytes &&
               a->process_bytes == b->process_bytes && a->n_other == b->n_other && a->rounded == b->rounded &&
               a->request_is_segment == b->request_is_segment && a->xla == b->xla && !strcmp(a->dtype, b->dtype) &&
               a->occurrences == b->occurrences && a->self_from_other == b->self_from_other &&
               a->spill == b->spill && a->msg_hint_expandable == b->msg_hint_expandable &&
               a->garbage_figure == b->garbage_figure && a->max_model_len == b->max_model_len &&
               a->kv_cache_tokens == b->kv_cache_tokens && a->smi_processes == b->smi_processes &&
               a->smi_processes_bytes == b->smi_processes_bytes && a->program_bytes == b->program_bytes &&
               a->held_elsewhere_bytes == b->held_elsewhere_bytes && a->backoff_steps == b->backoff_steps &&
               a->backoff_last_bytes == b->backoff_last_bytes && a->dtype_from_op == b->dtype_from_op &&
               a->verdict == b->verdict &&
               a->have_headroom == b->have_headroom && a->headroom_bytes == b->headroom_bytes &&
               a->available_bytes == b->available_bytes && a->missing_bytes == b->missing_bytes &&
               a->others_bytes == b->others_bytes && a->near_full == b->near_full && a->size_bug == b->size_bug &&
               a->size_corrupt == b->size_corrupt && a->have_torch_range == b->have_torch_range &&
               od_torch_version_cmp(a->torch_range.lower, b->torch_range.lower) == 0 &&
               od_torch_version_cmp(a->torch_range.upper, b->torch_range.upper) == 0;
    for (size_t i = 0; same && i < a->n_other; i++)
        same = a->other[i].pid == b->other[i].pid && a->other[i].bytes == b->other[i].bytes;
    if (!same)
        fail_msg("%s: report at line %llu (byte %llu) differs from the whole-text scan's (line %llu, byte %llu)",
                 what, (unsigned long long)b->line, (unsigned long long)b->offset, (unsigned long long)a->line,
                 (unsigned long long)a->offset);
}

/* a is the whole-text scan's result, b the stream's. */
static void same_triage(const char *what, const od_triage *a, const od_triage *b)
{
    if (a->n_reports != b->n_reports)
        fail_msg("%s: %zu reports, the whole-text scan found %zu", what, b->n_reports, a->n_reports);
    for (size_t i = 0; i < a->n_reports; i++)
        same_report(what, &a->reports[i], &b->reports[i]);
    if (a->n_summaries != b->n_summaries)
        fail_msg("%s: %zu summaries, the whole-text scan found %zu", what, b->n_summaries, a->n_summaries);
    for (size_t i = 0; i < a->n_summaries; i++) {
        const od_mem_summary *x = &a->summaries[i], *y = &b->summaries[i];
        if (x->offset != y->offset || x->line != y->line || x->device != y->device ||
            x->allocated_bytes != y->allocated_bytes || x->allocated_peak_bytes != y->allocated_peak_bytes ||
            x->reserved_bytes != y->reserved_bytes || x->reserved_peak_bytes != y->reserved_peak_bytes ||
            x->non_releasable_bytes != y->non_releasable_bytes || x->have_non_releasable != y->have_non_releasable || x->ooms != y->ooms || x->retries != y->retries ||
            x->have_counts != y->have_counts || x->verdict != y->verdict)
            fail_msg("%s: summary %zu differs", what, i);
    }
    if (!a->stats != !b->stats || (a->stats && memcmp(a->stats, b->stats, sizeof *a->stats) != 0))
        fail_msg("%s: memory_stats differ", what);
    if (a->n_gpus != b->n_gpus || a->n_procs != b->n_procs)
        fail_msg("%s: %zu GPUs and %zu processes, the whole-text scan found %zu and %zu", what, b->n_gpus, b->n_procs,
                 a->n_gpus, a->n_procs);
    for (size_t i = 0; i < a->n_gpus; i++) {
        const od_smi_gpu *x = &a->gpus[i], *y = &b->gpus[i];
        if (x->index != y->index || strcmp(x->name, y->name) || strcmp(x->bus_id, y->bus_id) ||
            x->total_bytes != y->total_bytes || x->used_bytes != y->used_bytes || x->free_bytes != y->free_bytes ||
            x->reserved_bytes != y->reserved_bytes || x->have_free != y->have_free ||
            x->have_reserved != y->have_reserved)
            fail_msg("%s: GPU %zu differs", what, i);
    }
    for (size_t i = 0; i < a->n_procs; i++) {
        const od_smi_process *x = &a->procs[i], *y = &b->procs[i];
        if (x->gpu != y->gpu || x->pid != y->pid || strcmp(x->name, y->name) || x->bytes != y->bytes)
            fail_msg("%s: process %zu differs", what, i);
    }
    if (!a->smi_format != !b->smi_format || (a->smi_format && strcmp(a->smi_format, b->smi_format)) ||
        a->smi_verdict != b->smi_verdict)
        fail_msg("%s: nvidia-smi format or verdict differs", what);
}

static od_triage *stream_in_chunks(const char *text, size_t len, size_t chunk)
{
    od_triage_stream *ts = NULL;
    od_triage *t = NULL;
    od_error err;
    assert_int_equal(od_triage_stream_new(&ts, &err), OD_OK);
    for (size_t i = 0; i < len; i += chunk)
        assert_int_equal(od_triage_stream_feed(ts, text + i, len - i < chunk ? len - i : chunk, &err), OD_OK);
    assert_int_equal(od_triage_stream_finish(ts, &t, &err), OD_OK);
    od_triage_stream_free(ts);
    return t;
}

/* The stream equals the whole-text scan on text, fed whole and in chunks. Returns what
 * the whole-text scan found: reports, summaries and nvidia-smi GPUs. */
static size_t check(const char *what, const char *text, size_t len, int chunked)
{
    od_triage *whole = NULL;
    od_error err;
    assert_int_equal(od_triage_parse_whole(text, len, &whole, &err), OD_OK);
    static const size_t chunks[] = {SIZE_MAX, 1, 7, 4093};
    for (size_t c = 0; c < (chunked ? 4u : 1u); c++) {
        if (chunks[c] == 1 && len > 200000)
            continue;
        od_triage *t = stream_in_chunks(text, len, chunks[c] == SIZE_MAX ? (len ? len : 1) : chunks[c]);
        char name[600];
        snprintf(name, sizeof name, "%s (chunks of %zu)", what, chunks[c] == SIZE_MAX ? len : chunks[c]);
        same_triage(name, whole, t);
        od_triage_free(t);
    }
    size_t found = whole->n_reports + whole->n_summaries + whole->n_gpus;
    od_triage_free(whole);
    return found;
}

/* text with n filler lines after every line, and 2n before and after it all. */
static char *padded(const char *text, size_t len, size_t n, size_t *out_len)
{
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    size_t fl = strlen(FILLER);
    char *b = malloc(len + (lines * n + 4 * n) * fl + 1);
    assert_non_null(b);
    size_t k = 0;
    for (size_t j = 0; j < 2 * n; j++, k += fl)
        memcpy(b + k, FILLER, fl);
    for (size_t i = 0; i < len; i++) {
        b[k++] = text[i];
        if (text[i] == '\n')
            for (size_t j = 0; j < n; j++, k += fl)
                memcpy(b + k, FILLER, fl);
    }
    if (len && text[len - 1] != '\n')
        b[k++] = '\n';
    for (size_t j = 0; j < 2 * n; j++, k += fl)
        memcpy(b + k, FILLER, fl);
    b[k] = '\0';
    *out_len = k;
    return b;
}

static void each_fixture(void (*fn)(const char *path, const char *text, size_t len))
{
    size_t files = 0;
    for (size_t d = 0; dirs[d]; d++) {
        DIR *dir = opendir(dirs[d]);
        if (!dir)
            continue;
        struct dirent *e;
        while ((e = readdir(dir)) != NULL) {
            char path[512];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
            size_t n = strlen(e->d_name);
            if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (4 << 20) ||
                (n > 3 && !strcmp(e->d_name + n - 3, ".gz")))
                continue;
            size_t len;
            char *text = slurp(path, &len);
            fn(path, text, len);
            free(text);
            files++;
        }
        closedir(dir);
    }
    assert_true(files > 100);
}

static void fixture_as_is(const char *path, const char *text, size_t len)
{
    check(path, text, len, 1);
}

static void fixture_padded(const char *path, const char *text, size_t len)
{
    if (len > (256 << 10))
        return;
    size_t plen;
    char *p = padded(text, len, 300, &plen);
    char what[600];
    snprintf(what, sizeof what, "%s with 300 filler lines after each line", path);
    check(what, p, plen, 0);
    free(p);
    p = padded(text, len, 3, &plen);
    snprintf(what, sizeof what, "%s with 3 filler lines after each line", path);
    check(what, p, plen, 0);
    free(p);
}

/* 300 filler lines inserted at one place, for each place in turn: a phrase the scan needs
 * from a line far from the anchor it belongs to must be one the stream keeps. */
static void fixture_gaps(const char *path, const char *text, size_t len)
{
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    if (lines > 300 || len > (64 << 10))
        return;
    size_t fl = strlen(FILLER), n = 300;
    char *b = malloc(len + n * fl + 1);
    assert_non_null(b);
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '\n')
            continue;
        memcpy(b, text, i + 1);
        for (size_t j = 0; j < n; j++)
            memcpy(b + i + 1 + j * fl, FILLER, fl);
        memcpy(b + i + 1 + n * fl, text + i + 1, len - i - 1);
        char what[600];
        snprintf(what, sizeof what, "%s with filler lines after byte %zu", path, i);
        check(what, b, len + n * fl, 0);
    }
    free(b);
}

static void fixtures_gaps(void **state)
{
    (void)state;
    each_fixture(fixture_gaps);
}

/* Append s to the buffer b (of *len bytes so far, room enough). */
static void add(char *b, size_t *len, const char *s)
{
    size_t n = strlen(s);
    memcpy(b + *len, s, n);
    *len += n;
    b[*len] = '\0';
}

static void add_filler(char *b, size_t *len, size_t lines)
{
    for (size_t i = 0; i < lines; i++)
        add(b, len, FILLER);
}

/* Readings that reach far from their anchor, and phrases split by a logger's wrapping. */
static void synthetic(void **state)
{
    (void)state;
    char *b = malloc(4 << 20);
    char row[256];
    size_t n = 0;
    /* a memory_summary() table of 120 rows, its OOM count in the last */
    add_filler(b, &n, 500);
    add(b, &n, "|                  PyTorch CUDA memory summary, device ID 0                 |\n");
    for (int i = 0; i < 118; i++)
        add(b, &n, "|       from large pool |       0 B  |       0 B  |       0 B  |       0 B  |\n");
    add(b, &n, "|            CUDA OOMs: 5         |        cudaMalloc retries: 9         |\n");
    add_filler(b, &n, 500);
    assert_true(check("a 120-row memory summary", b, n, 1) > 0);
    /* nvidia-smi --query-gpu CSV with 200 GPUs */
    n = 0;
    add_filler(b, &n, 500);
    add(b, &n, "index, name, memory.total [MiB], memory.used [MiB]\n");
    for (int i = 0; i < 200; i++) {
        snprintf(row, sizeof row, "%d, NVIDIA H200, 143771, %d\n", i, 1000 + i);
        add(b, &n, row);
    }
    add_filler(b, &n, 500);
    assert_true(check("nvidia-smi CSV with 200 GPUs", b, n, 1) > 0);
    /* a BFC report whose Stats: come after a long chunk listing */
    n = 0;
    add_filler(b, &n, 500);
    add(b, &n, "W tensorflow/core/common_runtime/bfc_allocator.cc:424] Allocator (GPU_0_bfc) ran out of memory "
               "trying to allocate 1.00GiB (rounded to 1073741824)\n");
    for (int i = 0; i < 600; i++) {
        snprintf(row, sizeof row, "I bfc_allocator.cc:905] Chunk at 0x7f%08x of size 256 next %d\n", i * 256, i + 1);
        add(b, &n, row);
    }
    add(b, &n, "I bfc_allocator.cc:930] Stats:\nLimit:                  15695549440\nInUse:                  15428690176\n");
    add_filler(b, &n, 500);
    add(b, &n, "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
               "shape[256,1024,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0\n");
    assert_true(check("a BFC report and its Stats: 600 lines later", b, n, 1) > 0);
    /* DeepSpeed's figures long before its null workspace */
    n = 0;
    add(b, &n, "Requested:\t2147483648\nFree:\t1073741824\nTotal:\t85899345920\n");
    add_filler(b, &n, 500);
    add(b, &n, "!!!! kernel execution error. (m: 4096, n: 8, k: 4096, error: 13)\nWorkspace is null.\n");
    assert_true(check("DeepSpeed's figures far before Workspace is null", b, n, 1) > 0);
    /* the input's flags from lines far from the report */
    n = 0;
    add(b, &n, "import onnxruntime as ort\n");
    add_filler(b, &n, 500);
    add(b, &n, "CUDA failure 2: out of memory ; GPU=0 ; hostname=x ; expr=cudaMalloc((void**)&p, size);\n");
    add_filler(b, &n, 500);
    assert_true(check("onnxruntime named far from the CUDA failure", b, n, 1) > 0);
    n = 0;
    add(b, &n, "2024-05-01 12:00:00 INFO vllm.engine: starting\n");
    add_filler(b, &n, 500);
    add(b, &n, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
               "of 79.15 GiB of which 1.06 GiB is free.\n");
    assert_true(check("vLLM named far from the OOM", b, n, 1) > 0);
    /* an anchor split by a logger's wrapping, neither half an anchor itself */
    n = 0;
    add_filler(b, &n, 500);
    add(b, &n, "RuntimeError: CUDA out of mem\nory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total capacity; "
               "9.71 GiB already allocated; 4.56 MiB free; 9.72 GiB reserved in total by PyTorch)\n");
    add_filler(b, &n, 500);
    assert_true(check("an OOM message wrapped inside \"memory\"", b, n, 1) > 0);
    free(b);
}

static void fixtures(void **state)
{
    (void)state;
    each_fixture(fixture_as_is);
}

static void fixtures_padded(void **state)
{
    (void)state;
    each_fixture(fixture_padded);
}

/* Line numbers and offsets are the input's, past a long stretch the stream forgot. */
static void places_after_filler(void **state)
{
    (void)state;
    const char *msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                      "capacity of 79.15 GiB of which 1.06 GiB is free.\n";
    size_t fl = strlen(FILLER), n = 200000;
    char *b = malloc(n * fl + strlen(msg) + 1);
    for (size_t i = 0; i < n; i++)
        memcpy(b + i * fl, FILLER, fl);
    strcpy(b + n * fl, msg);
    od_triage *t = NULL;
    od_error err;
    assert_int_equal(od_triage_parse(b, strlen(b), &t, &err), OD_OK);
    assert_int_equal(t->n_reports, 1);
    assert_int_equal(t->reports[0].line, n + 1);
    assert_int_equal(t->reports[0].offset, n * fl);
    assert_int_equal(t->reports[0].requested_bytes, 2ULL << 30);
    od_triage_free(t);
    free(b);
}

/* Empty lines cost what lines do: the stream holds the few before the next anchor, not all
 * of them (it counted their bytes only, and an empty line had none: a gzip of 200 M
 * newlines took 8 GiB). Half a million empty lines, a word, half a million more, then a
 * message: found where it is, for the memory of a window. */
static void empty_lines_are_forgotten(void **state)
{
    (void)state;
    const char *msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n";
    size_t half = 500000, n = 2 * half + 2 + strlen(msg);
    char *b = malloc(n + 1);
    memset(b, '\n', 2 * half + 2);
    b[half] = 'x';
    strcpy(b + 2 * half + 2, msg);
    od_triage_stream *ts = NULL;
    od_error err;
    assert_int_equal(od_triage_stream_new(&ts, &err), OD_OK);
    size_t most = 0;
    for (size_t fed = 0; fed < n; fed += 65536) {
        assert_int_equal(od_triage_stream_feed(ts, b + fed, n - fed < 65536 ? n - fed : 65536, &err), OD_OK);
        size_t held = od_triage_stream_held_bytes(ts);
        most = held > most ? held : most;
    }
    /* the window (8 KiB of lines, 40 B each to place them) and a memory_stats() candidate
     * of blank lines, doubled as buffers grow; it was 43 MB */
    if (most > (4u << 20))
        fail_msg("the stream held %zu bytes for %zu empty lines", most, 2 * half + 1);
    od_triage *t = NULL;
    assert_int_equal(od_triage_stream_finish(ts, &t, &err), OD_OK);
    assert_int_equal(t->n_reports, 1);
    assert_int_equal(t->reports[0].line, 2 * half + 2);
    assert_int_equal(t->reports[0].offset, 2 * half + 2);
    assert_int_equal(t->reports[0].requested_bytes, 2ULL << 30);
    od_triage_free(t);
    od_triage_stream_free(ts);
    free(b);
}

/* A line that '\r's keep going is held from its last '\r' once it passes 32 MiB: 200 MiB of
 * bare '\r's, then a message on the next line, cost what a few such lines do (its buffer
 * grown past 32 MiB once), not all of it (400 MB of them took 1.2 GB), and the message is
 * found where it is. */
static void redrawn_line_is_bounded(void **state)
{
    (void)state;
    const char *msg = "\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB.\n";
    static char crs[65536];
    memset(crs, '\r', sizeof crs);
    size_t pieces = 3200, total = pieces * sizeof crs;
    od_triage_stream *ts = NULL;
    od_error err;
    assert_int_equal(od_triage_stream_new(&ts, &err), OD_OK);
    size_t most = 0;
    for (size_t i = 0; i < pieces; i++) {
        assert_int_equal(od_triage_stream_feed(ts, crs, sizeof crs, &err), OD_OK);
        size_t held = od_triage_stream_held_bytes(ts);
        most = held > most ? held : most;
    }
    assert_int_equal(od_triage_stream_feed(ts, msg, strlen(msg), &err), OD_OK);
    if (most > (size_t)7 * OD_LINE_MAX_BYTES)
        fail_msg("the stream held %zu bytes for a line of %zu '\\r's", most, total);
    od_triage *t = NULL;
    assert_int_equal(od_triage_stream_finish(ts, &t, &err), OD_OK);
    assert_int_equal(t->n_reports, 1);
    assert_int_equal(t->reports[0].line, 2);
    assert_int_equal(t->reports[0].offset, total + 1);
    od_triage_free(t);
    od_triage_stream_free(ts);
}

/* No line break in OD_LINE_MAX_BYTES: refused where the run started, before reading on. */
static void no_line_break(void **state)
{
    (void)state;
    size_t n = 2 * (size_t)OD_LINE_MAX_BYTES + 2;
    char *b = calloc(1, n + 64);
    memcpy(b, "a first line\n", 13);
    od_triage_stream *ts = NULL;
    od_error err;
    assert_int_equal(od_triage_stream_new(&ts, &err), OD_OK);
    od_status st = OD_OK;
    size_t fed = 0;
    for (; fed < n && st == OD_OK; fed += 65536)
        st = od_triage_stream_feed(ts, b + fed, 65536, &err);
    assert_int_equal(st, OD_ERR_LIMIT);
    assert_true(err.has_offset);
    assert_int_equal(err.offset, 13);
    assert_true(fed <= OD_LINE_MAX_BYTES + 13 + 65536);
    od_triage *t = NULL;
    assert_int_equal(od_triage_stream_finish(ts, &t, &err), OD_ERR_LIMIT);
    assert_null(t);
    od_triage_stream_free(ts);
    /* a '\r' ends a run (progress bars), though not a line */
    for (size_t i = 13 + OD_LINE_MAX_BYTES / 2; i < n; i += OD_LINE_MAX_BYTES / 2)
        b[i] = '\r';
    assert_int_equal(od_triage_parse(b, n, &t, &err), OD_OK);
    od_triage_free(t);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixtures),
        cmocka_unit_test(fixtures_padded),
        cmocka_unit_test(fixtures_gaps),
        cmocka_unit_test(synthetic),
        cmocka_unit_test(places_after_filler),
        cmocka_unit_test(no_line_break),
        cmocka_unit_test(empty_lines_are_forgotten),
        cmocka_unit_test(redrawn_line_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
