/* test_report.c - the timeline (downsampling, reserved from segment events, iteration
 * boundaries) against the fixtures' own ground truth (their .json memory_summary and
 * step_log), and the HTML writer: self-contained, escaped, sections as inputs allow. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>
#include "snapload.h"

#include "analyze/summary.h"
#include "analyze/timeline.h"
#include "render/report.h"

#define MiB (1024ull * 1024ull)

static od_snapshot *load(const char *path)
{
    return load_snapshot(path);
}

typedef struct {
    od_snapshot *snap;
    od_summary *sum;
    od_timeline *t;
} built;

static built build(const char *path, size_t points)
{
    built b = {load(path), NULL, NULL};
    od_error err;
    assert_int_equal(od_summarize(b.snap, &b.sum, &err), OD_OK);
    assert_true(b.sum->n_devices >= 1);
    assert_int_equal(od_timeline_build(b.snap, &b.sum->devices[0], points, 6, &b.t, &err), OD_OK);
    return b;
}

static void unbuild(built *b)
{
    od_timeline_free(b->t);
    od_summary_free(b->sum);
    od_snapshot_free(b->snap);
}

static uint64_t max_of(const uint64_t *v, size_t n)
{
    uint64_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] > m)
            m = v[i];
    return m;
}

/* snap_train_oom: complete trace (recorded from process start), so reserved starts at 0;
 * its memory_summary says "GPU reserved memory ... Peak Usage 8574 MiB". */
static void oom_reserved_peak(void **state)
{
    built b = build("tests/data/snapshots/snap_train_oom.pickle", 2000);
    assert_true(b.t->has_reserved);
    assert_int_equal(b.t->reserved_bytes[0], 0);
    assert_int_equal(b.t->peak_reserved_bytes / MiB, 8574);
    /* every entry fits in 2000 points: nothing is merged, the peak is the trace model's */
    assert_int_equal(b.t->peak_live_bytes, b.sum->devices[0].trace->peak_block_bytes);
    assert_int_equal(b.t->peak_time_us, b.sum->devices[0].trace->peak_time_us);
    assert_int_equal(max_of(b.t->live_bytes, b.t->n_points), b.t->peak_live_bytes);
    assert_int_equal(b.t->n_iterations, 0); /* OOM in the first forward: no optimizer step */
    unbuild(&b);
}

/* frag_default: memory_summary "GPU reserved memory | 1648 MiB | 1748 MiB": the final
 * and the peak reserve. */
static void frag_reserved(void **state)
{
    built b = build("tests/data/snapshots/frag_default.pickle", 2000);
    assert_true(b.t->has_reserved);
    assert_int_equal(b.t->reserved_bytes[0], 0);
    assert_int_equal(b.t->peak_reserved_bytes / MiB, 1748);
    assert_int_equal(b.t->reserved_bytes[b.t->n_points - 1] / MiB, 1648);
    unbuild(&b);
}

/* The 1M-entry wrapped trace: at most 2001 points, the peak kept, the groups stacked up to
 * the live total; memory_summary: reserved peak 27488 MiB (never released). */
static void long_downsampled(void **state)
{
    built b = build("tests/data/snapshots/snap_train_long.pickle.gz", 2000);
    const od_timeline *t = b.t;
    assert_true(t->n_points <= 2001);
    assert_true(t->n_points > 1000);
    assert_int_equal(max_of(t->live_bytes, t->n_points), t->peak_live_bytes);
    assert_int_equal(t->peak_live_bytes, b.sum->devices[0].trace->peak_block_bytes);
    assert_int_equal(t->peak_reserved_bytes / MiB, 27488);
    for (size_t i = 1; i < t->n_points; i++)
        assert_true(t->time_us[i] >= t->time_us[i - 1]);
    /* the site split adds up to the total wherever nothing was clamped */
    size_t equal = 0;
    for (size_t i = 0; i < t->n_points; i++) {
        uint64_t s = 0;
        for (size_t g = 0; g < t->n_groups; g++)
            s += t->group_bytes[i * t->n_groups + g];
        equal += s == t->live_bytes[i];
    }
    assert_true(equal * 100 >= t->n_points * 99);
    unbuild(&b);
}

/* leak_eval_no_grad: 8 Optimizer.step annotations; its step_log's allocated grows
 * (12118196224 - 2465729536) / 7 = 1378923813 B per step. Live memory at the boundaries
 * must grow by that much (within 5%) from one iteration to the next. */
static void leak_iterations(void **state)
{
    built b = build("tests/data/snapshots/leak_eval_no_grad.pickle", 2000);
    const od_timeline *t = b.t;
    assert_int_equal(strncmp(t->boundary_name, "Optimizer.step", 14), 0);
    assert_int_equal(t->n_iterations, 8);
    /* boundaries are Optimizer.step STARTs: the first comes before step 1 made the state */
    double growth = (double)(t->iterations[7].live_bytes - t->iterations[1].live_bytes) / 6.0;
    assert_true(fabs(growth - 1378923813.0) < 0.05 * 1378923813.0);
    for (size_t i = 0; i < 8; i++) {
        assert_true(t->iterations[i].peak_bytes >= t->iterations[i].live_bytes);
        if (i)
            assert_true(t->iterations[i].live_bytes > t->iterations[i - 1].live_bytes);
    }
    unbuild(&b);
}

/* The layout at the peak, rebuilt from the trace: its reserve at most the peak reserve the
 * memory_summary gives (frag_default 1748 MiB, snap_train_long 27488 MiB), its busy bytes
 * the peak allocated (1612 MiB, 26130 MiB): exact where the replay gives block sizes,
 * within the 512-B rounding guess (1%) elsewhere. */
static void peak_layouts(void **state)
{
    const struct { const char *path; uint64_t reserved_mib, allocated_mib; } cases[] = {
        {"tests/data/snapshots/frag_default.pickle", 1748, 1612},
        {"tests/data/snapshots/snap_train_long.pickle.gz", 27488, 26130},
    };
    for (size_t i = 0; i < 2; i++) {
        built b = build(cases[i].path, 100);
        const od_device_summary *d = &b.sum->devices[0];
        od_layout *l = NULL;
        od_error err;
        assert_int_equal(od_layout_at(d->trace, d->trace->peak_index, &l, &err), OD_OK);
        /* the peak of allocated bytes need not be the moment of the peak reserve */
        assert_true(l->reserved_bytes / MiB <= cases[i].reserved_mib);
        assert_true(l->reserved_bytes >= l->busy_bytes);
        double busy = (double)l->busy_bytes / MiB;
        assert_true(fabs(busy - (double)cases[i].allocated_mib) < 0.01 * (double)cases[i].allocated_mib);
        if (d->trace->blocks_from_replay) /* block sizes exact: the summary's peak to the MiB */
            assert_int_equal(l->busy_bytes / MiB, cases[i].allocated_mib);
        assert_int_equal(l->orphans, 0);
        for (size_t k = 0; k < l->n_segments; k++) { /* blocks inside their segment, in order */
            const od_layout_segment *sg = &l->segments[k];
            uint64_t pos = sg->address;
            for (size_t j = 0; j < sg->n_blocks; j++) {
                const od_layout_block *bl = &l->blocks[sg->first_block + j];
                assert_true(bl->address >= pos);
                pos = bl->address + bl->size;
                assert_true(pos <= sg->address + sg->size);
            }
        }
        od_layout_free(l);
        assert_int_equal(od_layout_at(d->trace, d->entries, &l, &err), OD_ERR_ARG);
        unbuild(&b);
    }
}

static void tiny_points(void **state)
{
    built b = build("tests/data/snapshots/frag_default.pickle", 2);
    assert_true(b.t->n_points <= 3);
    assert_int_equal(max_of(b.t->live_bytes, b.t->n_points), b.t->peak_live_bytes);
    od_timeline *t = NULL;
    od_error err;
    assert_int_equal(od_timeline_build(b.snap, &b.sum->devices[0], 1, 6, &t, &err), OD_ERR_ARG);
    unbuild(&b);
}

/* ---------- the writer ---------- */

static char *render(const od_report_input *in, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    od_error err;
    od_status st = od_report_write(in, f, &err);
    fclose(f);
    assert_int_equal(st, OD_OK);
    return buf;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* A snapshot built by hand whose frame names try to break out of the markup. */
static void escaped_and_self_contained(void **state)
{
    od_frame frames[1] = {{"/x/<script>alert(1)</script>.py", "f\"onload=\"x", 7}};
    uint32_t stack_frames[1] = {0};
    od_stack stacks[2] = {{0, 0}, {0, 1}};
    od_block blocks[2] = {{0x1000, 1024, 1000, 1, OD_BLOCK_ACTIVE_ALLOCATED},
                          {0x1400, 3072, 3072, 0, OD_BLOCK_INACTIVE}};
    od_segment seg = {0};
    seg.address = 0x1000;
    seg.total_size = 4096;
    seg.allocated_size = 1024;
    seg.is_large = 1;
    seg.n_blocks = 2;
    od_trace_entry e[4] = {
        {0x1000, 1000, 10, 0, 0, 1, OD_ACT_ALLOC},
        {0x1400, 2000, 20, 0, 0, 1, OD_ACT_ALLOC},
        {0x1400, 2000, 30, 0, 0, 1, OD_ACT_FREE_REQUESTED},
        {0x1400, 2000, 40, 0, 0, 1, OD_ACT_FREE_COMPLETED},
    };
    od_trace_store *store = od_trace_store_of(e, 4);
    assert_non_null(store);
    od_device_trace tr;
    od_trace_store_view(store, 0, 4, 0, &tr);
    od_snapshot s = {0};
    s.torch_major = 2;
    s.segments = &seg;
    s.n_segments = 1;
    s.blocks = blocks;
    s.n_blocks = 2;
    s.has_traces = 1;
    s.traces = &tr;
    s.n_traces = 1;
    s.frames = frames;
    s.n_frames = 1;
    s.stack_frames = stack_frames;
    s.stacks = stacks;
    s.n_stacks = 2;
    s.settings.present = 1;
    s.settings.alloc_conf = "<b>";
    od_report_item item = {OD_REPORT_SNAPSHOT, "a&b<.pickle", &s, NULL, 0, NULL, NULL, NULL, NULL, 0};
    od_report_input in = {0};
    in.items = &item;
    in.n_items = 1;
    size_t len;
    char *html = render(&in, &len);
    /* inline scripts only: the timeline's and the allocator state's data and the page's code;
     * no name breaks out */
    assert_int_equal(count(html, "<script"), 3); /* + the allocator state */
    assert_int_equal(count(html, "</script>"), 3);
    assert_int_equal(count(html, "<script type=\"application/json\" class=\"od-timeline\""), 1);
    assert_int_equal(count(html, "onload"), count(html, "f&quot;onload=&quot;x") + count(html, "f\\\"onload=\\\"x"));
    assert_true(count(html, "\"/x/\\u003cscript\\u003ealert(1)\\u003c/script\\u003e.py:7:f\\\"onload=\\\"x\"") == 2); /* frame, group */
    assert_true(count(html, "&lt;script&gt;alert(1)&lt;/script&gt;") > 0);
    assert_true(count(html, "a&amp;b&lt;.pickle") > 0);
    assert_int_equal(count(html, "<b>"), 0);
    /* nothing the browser would fetch */
    assert_int_equal(count(html, "http"), 0);
    assert_int_equal(count(html, "src="), 0);
    assert_int_equal(count(html, "href="), 0);
    assert_int_equal(count(html, "url("), 0);
    assert_int_equal(count(html, "@import"), 0);
    /* timeline + segment map drawn: 1 used + 3 free bytes of 4 KiB, peak at a 3000 B
     * request: a 3072 B block (512-B rounding) */
    assert_int_equal(count(html, "<svg id=\"timeline-"), 1);
    assert_int_equal(count(html, "<svg id=\"segments-"), 2); /* at the peak and at the end */
    assert_true(count(html, "peak 3.00 KiB") == 1);
    /* same input, same bytes */
    size_t len2;
    char *again = render(&in, &len2);
    assert_int_equal(len, len2);
    assert_memory_equal(html, again, len);
    free(again);
    free(html);
    od_trace_store_free(store);
}

/* The elements between two markers, as the text between them. */
static char *between(const char *html, const char *from, const char *to)
{
    const char *a = strstr(html, from);
    assert_non_null(a);
    a += strlen(from);
    const char *z = strstr(a, to);
    assert_non_null(z);
    return strndup(a, (size_t)(z - a));
}

/* The timeline's data for the page's script, on snap_train_oom (635 entries, 257
 * lifetimes): every lifetime embedded once in each column, frames deduplicated, times as
 * deltas; and the 1 M-entry trace's page stays under 5 MiB. */
/* A diagnosis document (render/doctor_doc.h's shape) with these evidence sentences. */
static json_t *diagnosis_doc(const char *verdict, const char *headline, const char *const *ev, size_t n,
                             const char *now_action, const char *now_effect, const char *verify)
{
    json_t *e = json_array(), *now = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(e, json_pack("{s:s,s:n,s:n,s:n}", "text", ev[i], "file", "key", "value"));
    if (now_action)
        json_array_append_new(now, json_pack("{s:i,s:s,s:s,s:{s:s,s:n,s:n,s:n,s:s},s:n}", "rank", 1, "action",
                                             now_action, "effect", now_effect, "check", "method", "none", "avoids_oom",
                                             "predicted_peak_bytes", "releases_bytes", "detail", "", "command"));
    return json_pack("{s:i,s:s,s:o,s:[],s:o,s:o,s:[],s:s,s:n,s:[]}", "schema_version", 1, "verdict", verdict,
                     "headline", headline ? json_string(headline) : json_null(), "inputs", "evidence", e, "do_now", now,
                     "long_term", "verify", verify ? verify : "", "verify_command", "snapshots");
}

static void interactive_data(void **state)
{
    od_snapshot *s = load("tests/data/snapshots/snap_train_oom.pickle");
    od_report_item item = {OD_REPORT_SNAPSHOT, "snap_train_oom.pickle", s, NULL, 0, NULL, NULL, NULL, NULL, 0};
    od_report_input in = {0};
    in.items = &item;
    in.n_items = 1;
    /* evidence names its snapshot, then the moment: entry 500 (the OOM), the peak */
    const char *ev[] = {"snap_train_oom.pickle: OOM at entry 500: 128.00 MiB requested",
                        "snap_train_oom.pickle: 8.37 GiB live at the peak", "tried: x -- still OOM at entry 500",
                        "snap_train_oom.pickle: torch 2.3 or newer", "other.pickle: OOM at entry 500",
                        "snap_train_oom.pickle: largest free block 352.00 MiB"};
    json_t *diag = diagnosis_doc("capacity", NULL, ev, 6, NULL, NULL, NULL);
    in.diagnosis = diag;
    size_t len;
    char *html = render(&in, &len);
    assert_non_null(strstr(html, "<li><span class=\"od-ev\" data-item=\"0\" data-device=\"0\" data-a=\"1796050986552070\" "
                                 "data-b=\"1796050986552070\">snap_train_oom.pickle: OOM at entry 500"));
    assert_non_null(strstr(html, "data-a=\"1796050986551197\" data-b=\"1796050986551197\">snap_train_oom.pickle: 8.37 GiB"));
    assert_non_null(strstr(html, "data-b=\"1796050986552070\">tried: x"));
    assert_non_null(strstr(html, "<li><span>snap_train_oom.pickle: torch 2.3 or newer"));
    assert_non_null(strstr(html, "<li><span>other.pickle: OOM at entry 500"));
    /* evidence about free blocks: the segment map at the end, which carries its item */
    assert_non_null(strstr(html, "<li><span class=\"od-ev\" data-item=\"0\" data-device=\"0\" data-map=\"end\">"
                                 "snap_train_oom.pickle: largest free block"));
    assert_int_equal(count(html, "<figure data-map=\"end\" data-item=\"0\" data-device=\"0\">"), 1);
    char *data = between(html, "<script type=\"application/json\" class=\"od-timeline\" data-for=\"timeline-0\">",
                         "</script>");
    assert_non_null(strstr(data, "\"entries\":635,\"lives\":257,\"all\":1,\"item\":0,\"device\":0"));
    const char *cols[] = {"\"as\":[", "\"ad\":[", "\"ab\":[", "\"ar\":[", "\"ak\":[", "\"ai\":["};
    for (size_t i = 0; i < 6; i++) {
        char *v = between(data, cols[i], "]");
        assert_int_equal(count(v, ",") + 1, 257);
        free(v);
    }
    /* live at the peak, for the icicle: the 183 blocks oomdoc snapshot counts there */
    char *ap = between(data, "\"ap\":[", "]");
    assert_int_equal(count(ap, ",") + 1, 183);
    free(ap);
    /* each frame once, however many stacks share it */
    char *fr = between(data, "\"fr\":[", "]");
    assert_int_equal(count(fr, "\"/home/user/project/train.py:96:train_step\""), 1);
    assert_int_equal(count(fr, "\"/home/user/project/train.py:412:\\u003cmodule\\u003e\""), 1);
    free(fr);
    /* the first point is the trace's first entry: delta 0 from t0 */
    assert_non_null(strstr(data, ",\"p\":[0,"));
    /* the layer the script enhances: the static plot, its groups named for the script */
    assert_int_equal(count(html, "<g class=\"xax\">"), 1);
    assert_int_equal(count(html, "<g class=\"marks\">"), 1);
    assert_true(count(html, "<path data-k=\"") >= 3);
    free(data);
    /* the allocator state at sampled entries, the peak among them: its busy bytes are the
     * peak allocated (block sizes from the replay), entries 0 and the last are sampled */
    data = between(html, "<script type=\"application/json\" class=\"od-state\" data-for=\"segments-", "</script>");
    assert_non_null(strstr(data, "{\"entries\":635,\"peak\":499,\"from_replay\":1,"));
    assert_non_null(strstr(data, "{\"i\":499,\"t\":882148,\"r\":8990490624,\"u\":8989302272,\"o\":0,"));
    assert_non_null(strstr(data, "{\"i\":0,"));
    assert_non_null(strstr(data, "{\"i\":634,"));
    free(data);
    free(html);
    od_snapshot_free(s);

    s = load("tests/data/snapshots/snap_train_long.pickle.gz");
    item.snapshot = s;
    in.diagnosis = NULL;
    html = render(&in, &len);
    assert_true(len <= 5 * MiB);
    data = between(html, "data-for=\"timeline-0\">", "</script>");
    assert_non_null(strstr(data, "\"entries\":1000000,"));
    assert_non_null(strstr(data, "\"all\":0"));
    char *v = between(data, "\"ab\":[", "]");
    assert_int_equal(count(v, ",") + 1, 30000);
    free(v);
    free(data);
    free(html);
    json_decref(diag);
    od_snapshot_free(s);
}

/* The hooks: diagnosis at the top, the plan's stacked bar with the device line. */
static void hooks(void **state)
{
    const char *ev[] = {"stranded 1.2 GiB"};
    json_t *d = diagnosis_doc("fragmentation", "the memory exists but is not contiguous", ev, 1,
                              "set expandable_segments:True", "no stranded memory", "oomdoc doctor x.pickle");
    const char *cat[] = {"parameters", "gradients", "activations"};
    uint64_t bytes[] = {2 * MiB * 1024, 2 * MiB * 1024, 4 * MiB * 1024};
    od_report_plan p = {"GPT-2, batch 8", cat, bytes, 3, 9 * MiB * 1024, 16 * MiB * 1024};
    od_report_input in = {0};
    in.diagnosis = d;
    in.plan = &p;
    in.generated = "generated <now>";
    size_t len;
    char *html = render(&in, &len);
    char *diag = strstr(html, "Diagnosis: "), *plan = strstr(html, "<svg id=\"plan-");
    assert_non_null(diag);
    assert_non_null(plan);
    assert_true(diag < plan);
    assert_non_null(strstr(html, "set expandable_segments:True"));
    assert_non_null(strstr(html, "device 16.00 GiB"));
    assert_non_null(strstr(html, "Predicted peak allocated 8.00 GiB; fits."));
    assert_non_null(strstr(html, "generated &lt;now&gt;"));
    assert_int_equal(count(html, "<rect class=\"s"), 3);
    free(html);
    json_decref(d);
}

/* Two snapshots: the second compared with the first, after both snapshot sections (the
 * first timeline stays the page's first plot): frag_default then frag_expandable, 55
 * segments at the end against 3 (their memory_summary). */
static void compare(void **state)
{
    od_snapshot *a = load("tests/data/snapshots/frag_default.pickle"), *b = load("tests/data/snapshots/frag_expandable.pickle");
    od_report_item items[2] = {{OD_REPORT_SNAPSHOT, "before.pickle", a, NULL, 0, NULL, NULL, NULL, NULL, 0},
                               {OD_REPORT_SNAPSHOT, "after.pickle", b, NULL, 0, NULL, NULL, NULL, NULL, 0}};
    od_report_input in = {0};
    in.items = items;
    in.n_items = 2;
    size_t len;
    char *html = render(&in, &len);
    char *sec = between(html, "<section class=\"compare\">", "</section>");
    assert_non_null(strstr(sec, "<h2>Compare <code>before.pickle</code> (before) and <code>after.pickle</code> (after)</h2>"));
    assert_non_null(strstr(sec, "<tr><td>segments at the end</td><td class=\"n\">55</td><td class=\"n\">3</td>"
                                "<td class=\"n\">&minus;52</td></tr>"));
    assert_int_equal(count(sec, "<path class=\"ml m"), 2);
    assert_non_null(strstr(sec, "<h3>Live at the peak, by category</h3>"));
    assert_true(strstr(html, "<svg id=\"timeline-0\"") < strstr(html, "<svg id=\"compare-"));
    free(sec);
    free(html);
    od_snapshot_free(b);
    /* the allocator states name each segment's stream and pool: snap_cudagraph's graph
     * pool (1, 0) on its capture stream */
    b = load("tests/data/snapshots/snap_cudagraph.pickle");
    items[0].snapshot = b;
    in.n_items = 1;
    html = render(&in, &len);
    assert_non_null(strstr(html, "\"homes\":[\"stream 0, default pool (0, 0)\","));
    assert_non_null(strstr(html, "\"stream 790322976, graph pool (1, 0)\"]}"));
    free(html);
    items[0].snapshot = a;
    /* one snapshot: no compare */
    in.n_items = 1;
    html = render(&in, &len);
    assert_null(strstr(html, "<section class=\"compare\">"));
    free(html);
    od_snapshot_free(a);
    od_snapshot_free(b);
}

static void bad_input(void **state)
{
    od_report_item item = {OD_REPORT_SNAPSHOT, "x", NULL, NULL, 0, NULL, NULL, NULL, NULL, 0};
    od_report_input in = {0};
    in.items = &item;
    in.n_items = 1;
    od_error err;
    FILE *f = fopen("/dev/null", "w");
    assert_int_equal(od_report_write(&in, f, &err), OD_ERR_ARG);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(oom_reserved_peak),
        cmocka_unit_test(frag_reserved),
        cmocka_unit_test(long_downsampled),
        cmocka_unit_test(leak_iterations),
        cmocka_unit_test(peak_layouts),
        cmocka_unit_test(tiny_points),
        cmocka_unit_test(escaped_and_self_contained),
        cmocka_unit_test(interactive_data),
        cmocka_unit_test(compare),
        cmocka_unit_test(hooks),
        cmocka_unit_test(bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
