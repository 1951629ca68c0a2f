/* test_snapshot.c - snapshots loaded streamed (tracepass.h) against the same files loaded
 * whole: every device's pass gives the held trace's entries in order (without stacks),
 * from a plain file, from gzip and through a pipe-like input that cannot be read again;
 * and what a streamed load keeps is a few bytes an entry at most. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "oomdoc/snapshot.h"
#include "read/tracepass.h"
#include "snapload.h"

static const char *const fixtures[] = {
    "tests/data/snapshots/frag_default.pickle",   "tests/data/snapshots/frag_expandable.pickle",
    "tests/data/snapshots/leak_eval_no_grad.pickle", "tests/data/snapshots/snap_cudagraph.pickle",
    "tests/data/snapshots/snap_infer_llama.pickle.gz", "tests/data/snapshots/snap_train_default.pickle",
    "tests/data/snapshots/snap_train_big.pickle.gz", "tests/data/snapshots/snap_train_oom.pickle",
    "tests/data/snapshots/snap_train_long.pickle.gz", "tests/data/synthetic/multistream_accumulate.pickle",
    "tests/data/synthetic/graph_pool.pickle",     "tests/data/extra/torch113_layout.pickle",
};

/* Every pass of streamed gives held's entries, stacks aside; the rest of the snapshot is
 * the same. */
static void assert_passes_match(const od_snapshot *held, const od_snapshot *streamed)
{
    assert_int_equal(held->n_traces, streamed->n_traces);
    assert_int_equal(held->has_traces, streamed->has_traces);
    assert_int_equal(held->n_segments, streamed->n_segments);
    assert_int_equal(held->n_blocks, streamed->n_blocks);
    assert_int_equal(held->n_annotations, streamed->n_annotations);
    for (size_t b = 0; b < held->n_blocks; b++) {
        assert_true(held->blocks[b].address == streamed->blocks[b].address);
        assert_true(held->blocks[b].size == streamed->blocks[b].size);
    }
    od_trace_entry buf[1000];
    for (size_t d = 0; d < held->n_traces; d++) {
        const od_device_trace *h = &held->traces[d];
        assert_int_equal(h->n_entries, streamed->traces[d].n_entries);
        for (int round = 0; round < 2; round++) { /* a second pass reads the same */
            od_trace_pass *p = NULL;
            od_error err;
            assert_int_equal(od_trace_pass_open(streamed, (int64_t)d, &p, &err), OD_OK);
            size_t i = 0, k;
            while ((k = od_trace_pass_read(p, buf, round ? 1000 : 7)) > 0)
                for (size_t j = 0; j < k; j++, i++) {
                    od_trace_entry e = od_trace_at(h, i);
                    assert_true(buf[j].addr == e.addr);
                    assert_true(buf[j].size == e.size);
                    assert_true(buf[j].time_us == e.time_us);
                    assert_true(buf[j].stream == e.stream);
                    assert_true(buf[j].device_free == e.device_free);
                    assert_int_equal(buf[j].action, e.action);
                    assert_int_equal(buf[j].stack, 0);
                }
            assert_int_equal(od_trace_pass_status(p, &err), OD_OK);
            assert_int_equal(i, h->n_entries);
            od_trace_pass_close(p);
        }
    }
}

static od_snapshot *load_streamed(FILE *f, od_input **in)
{
    od_snapshot *s = NULL;
    od_error err;
    assert_int_equal(od_input_open_file(f, in, &err), OD_OK);
    if (od_snapshot_load_streamed(*in, &s, &err) != OD_OK)
        fail_msg("streamed load: %s", err.msg);
    assert_true(od_snapshot_is_streamed(s));
    return s;
}

static void streamed_equals_held(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
        od_snapshot *held = load_snapshot(fixtures[i]);
        assert_false(od_snapshot_is_streamed(held));
        FILE *f = fopen(fixtures[i], "rb");
        assert_non_null(f);
        od_input *in = NULL;
        od_snapshot *s = load_streamed(f, &in);
        assert_passes_match(held, s);
        od_snapshot_free(s);
        od_input_close(in);
        fclose(f);
        od_snapshot_free(held);
    }
}

/* The same bytes from memory (an input that cannot be read again, as a pipe) stream from
 * the compact store. */
static void streamed_from_memory(void **state)
{
    (void)state;
    const char *path = "tests/data/snapshots/snap_train_default.pickle";
    od_snapshot *held = load_snapshot(path);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    char *data = malloc((size_t)size);
    assert_int_equal(fread(data, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    od_input *in = NULL;
    od_snapshot *s = NULL;
    od_error err;
    assert_int_equal(od_input_open_memory(data, (size_t)size, &in, &err), OD_OK);
    assert_int_equal(od_snapshot_load_streamed(in, &s, &err), OD_OK);
    assert_passes_match(held, s);
    od_snapshot_free(s);
    od_input_close(in);
    free(data);
    od_snapshot_free(held);
}

/* A pass over a file that changed after the load fails with OD_ERR_IO, never a different
 * trace: one time value rewritten in place (the hashes differ), and the file cut short
 * (the pickle no longer reads). */
static void file_changed_between_passes(void **state)
{
    (void)state;
    const char *src = "tests/data/snapshots/snap_train_oom.pickle";
    FILE *f = fopen(src, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    size_t size = (size_t)ftell(f);
    rewind(f);
    unsigned char *data = malloc(size);
    assert_int_equal(fread(data, 1, size, f), size);
    fclose(f);
    /* the 300th 7-byte LONG1 (a trace entry's time_us): its lowest byte */
    size_t at = 0;
    for (size_t i = 0, seen = 0; i + 2 < size && !at; i++)
        if (data[i] == 0x8a && data[i + 1] == 7 && ++seen == 300)
            at = i + 2;
    assert_true(at > 0);
    for (int cut = 0; cut < 2; cut++) {
        char path[] = "/tmp/od_test_snapshot_XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        FILE *w = fdopen(fd, "w+b");
        assert_int_equal(fwrite(data, 1, size, w), size);
        fflush(w);
        rewind(w);
        od_input *in = NULL;
        od_snapshot *s = load_streamed(w, &in);
        if (cut) {
            assert_int_equal(ftruncate(fd, (off_t)(size / 2)), 0);
        } else {
            unsigned char b = (unsigned char)(data[at] ^ 1);
            assert_int_equal(pwrite(fd, &b, 1, (off_t)at), 1);
        }
        od_trace_pass *p = NULL;
        od_error err;
        assert_int_equal(od_trace_pass_open(s, 0, &p, &err), OD_OK);
        od_trace_entry buf[256];
        while (od_trace_pass_read(p, buf, 256) > 0)
            ;
        assert_int_equal(od_trace_pass_status(p, &err), OD_ERR_IO);
        assert_non_null(strstr(err.msg, "the file changed while it was read"));
        od_trace_pass_close(p);
        od_snapshot_free(s);
        od_input_close(in);
        fclose(w);
        unlink(path);
    }
    free(data);
}

/* A pickle that refers to a trace entry's frames list from outside the traces: whole, it
 * loads; streamed (the memo let the list go), it fails with OD_ERR_LIMIT and says to
 * read it whole. The second entry's list is the one let go (forgetting starts at the
 * first). */
static void forgotten_value_outside_the_trace(void **state)
{
    (void)state;
    static const char entry[] = "}\x94(\x8c\x06" "action\x94\x8c\x05" "alloc\x94\x8c\x04" "addr\x94K\x01\x8c\x04"
                                "size\x94M\x00\x02\x8c\x06" "frames\x94]\x94u";
    unsigned char pk[512];
    size_t n = 0;
#define PUT(lit_) (memcpy(pk + n, (lit_), sizeof(lit_) - 1), n += sizeof(lit_) - 1)
    PUT("\x80\x04}\x94(\x8c\x08segments\x94]\x94\x8c\x0d" "device_traces\x94]\x94]\x94(");
    /* memo: 0 root, 1 'segments', 2 [], 3 'device_traces', 4 outer, 5 inner */
    PUT(entry); /* 6 dict, 7 'action', 8 'alloc', 9 'addr', 10 'size', 11 'frames', 12 [] */
    /* the second entry fetches the keys: 13 dict, 14 [] */
    PUT("}\x94(h\x07h\x08h\x09K\x02h\x0aM\x00\x02h\x0b]\x94u");
    /* APPENDS, APPEND, a long key (the one-step path needs 16 bytes ahead), BINGET 14 */
    PUT("ea\x8c\x19" "a_frames_list_let_go_here\x94h\x0eu.");
#undef PUT
    od_input *in = NULL;
    od_snapshot *s = NULL;
    od_error err;
    assert_int_equal(od_input_open_memory(pk, n, &in, &err), OD_OK);
    if (od_snapshot_load(in, &s, &err) != OD_OK)
        fail_msg("whole: %s", err.msg);
    assert_int_equal(s->traces[0].n_entries, 2);
    od_snapshot_free(s);
    od_input_close(in);
    assert_int_equal(od_input_open_memory(pk, n, &in, &err), OD_OK);
    assert_int_equal(od_snapshot_load_streamed(in, &s, &err), OD_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "read the snapshot whole"));
    od_input_close(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(streamed_equals_held),
        cmocka_unit_test(streamed_from_memory),
        cmocka_unit_test(file_changed_between_passes),
        cmocka_unit_test(forgotten_value_outside_the_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
