/* test_prescribe.c - doctor's prescriptions are checked by oomdoc's own models before
 * they are advised, ranked, sized from the whole step and version-aware; on the real H200
 * fixtures (their OOM messages, snapshots and the model configs the runs used). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>
#include "slurp.h"
#include "snapload.h"

#include "analyze/diagnose.h"
#include "model/plan.h"
#include "read/hfconfig.h"
#include "read/triage/triage.h"

typedef struct {
    char *text;
    size_t len;
    od_triage *tri;
} message;

static message read_message(const char *path)
{
    message m;
    m.text = slurp(path, &m.len);
    od_error err;
    assert_int_equal(od_triage_parse(m.text, m.len, &m.tri, &err), OD_OK);
    assert_true(m.tri->n_reports >= 1);
    return m;
}

static void free_message(message *m)
{
    od_triage_free(m->tri);
    free(m->text);
}

static od_diag_input log_input(const char *name, const message *m)
{
    od_diag_input in = {name, OD_INPUT_LOG, m->tri, NULL, NULL, NULL, NULL, NULL};
    return in;
}

static od_diag_input snap_input(const char *name, const od_snapshot *s)
{
    od_diag_input in = {name, OD_INPUT_SNAPSHOT, NULL, NULL, NULL, s, NULL, NULL};
    return in;
}

static int evidence_has(const od_diagnosis *d, const char *needle)
{
    for (size_t i = 0; i < d->n_evidence; i++)
        if (strstr(d->evidence[i].text, needle))
            return 1;
    return 0;
}

static int do_now_names(const od_diagnosis *d, const char *needle)
{
    for (size_t i = 0; i < d->n_do_now; i++) {
        const od_remedy *m = &d->do_now[i];
        if (strstr(m->action, needle) || strstr(m->effect, needle) || strstr(m->check.detail, needle))
            return 1;
    }
    return 0;
}

/* snap_train_oom died under a 6% cap in its first forward; with the model and workload
 * the run used (llama-160m, batch 32 x 2048), the cap item comes first, sized from the
 * planner's full step (not the failed request), and the batch item gives the largest
 * micro-batch that fits under the 8.39 GiB cap with the accumulation that keeps 32. */
static void cap_from_the_whole_step(void **state)
{
    (void)state;
    size_t clen;
    char *cfg = slurp("examples/configs/llama-160m.json", &clen);
    od_model m;
    od_error err;
    assert_int_equal(od_hfconfig_parse(cfg, clen, &m, &err), OD_OK);
    free(cfg);
    od_workload w;
    od_workload_defaults(&w);
    w.batch = 32;
    w.seq = 2048;
    od_snapshot *s = load_snapshot("examples/snap_train_oom.pickle");
    message msg = read_message("examples/snap_train_oom.log");
    od_diag_input in[2] = {snap_input("snap", s), log_input("log", &msg)};
    od_diag_options o;
    memset(&o, 0, sizeof o);
    o.model = &m;
    o.workload = &w;
    o.config_path = "examples/configs/llama-160m.json";
    od_diagnosis *d = NULL;
    assert_int_equal(od_diagnose_with(in, 2, &o, &d, &err), OD_OK);
    assert_int_equal(d->verdict, OD_VERDICT_CAP_LIMIT);
    assert_true(d->n_do_now >= 2);
    const od_remedy *cap = &d->do_now[0];
    assert_non_null(strstr(cap->action, "set_per_process_memory_fraction"));
    assert_int_equal(cap->check.method, OD_CHECK_PLAN);
    assert_int_equal(cap->check.avoids_oom, 1);
    od_estimate e;
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_OK);
    assert_int_equal(cap->check.predicted_peak_bytes, e.peak_allocated_bytes);
    assert_true(e.peak_allocated_bytes > 60ull << 30); /* the step needs ~66 GiB, not 8.5 */
    double frac = 0;
    const char *p = strstr(cap->action, "at least ");
    assert_non_null(p);
    frac = strtod(p + 9, NULL);
    const od_oom_report *r = &msg.tri->reports[0];
    assert_true(frac * (double)r->capacity_bytes >= (double)e.peak_allocated_bytes);
    /* the batch item: micro-batch B fits under the cap, B + 1 does not */
    const od_remedy *mb = NULL;
    for (size_t i = 0; i < d->n_do_now && !mb; i++)
        if (strstr(d->do_now[i].action, "micro-batch"))
            mb = &d->do_now[i];
    assert_non_null(mb);
    assert_int_equal(mb->check.method, OD_CHECK_PLAN);
    unsigned long long b = 0, acc = 0;
    assert_int_equal(sscanf(mb->action, "micro-batch %llu with gradient accumulation %llu", &b, &acc), 2);
    assert_true(b >= 1 && b * acc >= 32 && (b - 1) * acc < 32 + acc);
    od_gpu g;
    od_gpu_custom(r->allowed_bytes, &g);
    od_gpu_custom(r->allowed_bytes + g.context_bytes, &g); /* the cap bounds the reserve only */
    od_workload w2 = w;
    uint64_t dev;
    int fits;
    w2.batch = b;
    w2.grad_accum = acc;
    assert_int_equal(od_plan_fits(&m, &w2, &g, &dev, &fits, &err), OD_OK);
    assert_true(fits);
    w2.batch = b + 1;
    w2.grad_accum = (32 + b) / (b + 1);
    assert_int_equal(od_plan_fits(&m, &w2, &g, &dev, &fits, &err), OD_OK);
    assert_false(fits);
    /* every item that suggests a command carries an oomdoc one */
    for (size_t i = 0; i < d->n_do_now; i++)
        if (d->do_now[i].command[0])
            assert_int_equal(strncmp(d->do_now[i].command, "oomdoc ", 7), 0);
    od_diagnosis_free(d);
    free_message(&msg);
    od_snapshot_free(s);
}

/* frag_default + its message: no empty_cache (nothing is releasable), a cap item checked by
 * replay that avoids the OOM, and every allocator setting the replay shows failing is in
 * the evidence (tried), not advised. */
static void frag_settings_tried_not_advised(void **state)
{
    (void)state;
    od_snapshot *s = load_snapshot("tests/data/snapshots/frag_default.pickle");
    message msg = read_message("tests/data/extracted/frag_default_oom.txt");
    od_diag_input in[2] = {snap_input("snap", s), log_input("log", &msg)};
    od_diagnosis *d = NULL;
    od_error err;
    assert_int_equal(od_diagnose_with(in, 2, NULL, &d, &err), OD_OK);
    assert_false(do_now_names(d, "empty_cache"));
    const od_remedy *cap = NULL;
    for (size_t i = 0; i < d->n_do_now && !cap; i++)
        if (strstr(d->do_now[i].action, "set_per_process_memory_fraction"))
            cap = &d->do_now[i];
    assert_non_null(cap);
    assert_int_equal(cap->check.method, OD_CHECK_REPLAY);
    assert_int_equal(cap->check.avoids_oom, 1);
    const od_snapshot_findings *f = &d->snapshots[0];
    assert_true(f->whatif_reproduces);
    for (size_t k = 1; k < f->n_whatifs; k++) {
        if (!f->whatifs[k].oom)
            continue;
        assert_false(do_now_names(d, f->whatifs[k].setting));
        /* one "tried" line per reason, naming every setting that fails for it */
        assert_true(evidence_has(d, "tried, replayed under the"));
        assert_true(evidence_has(d, f->whatifs[k].setting));
    }
    assert_true(evidence_has(d, "tried: call torch.cuda.empty_cache()"));
    od_diagnosis_free(d);
    free_message(&msg);
    od_snapshot_free(s);
}

/* leak_eval_no_grad: the site first, checked by arithmetic: its growth per step, and with
 * the device known, the steps left until the OOM. */
static void leak_site_first(void **state)
{
    (void)state;
    od_snapshot *s = load_snapshot("tests/data/snapshots/leak_eval_no_grad.pickle");
    od_diag_input in = snap_input("leak", s);
    od_diag_options o;
    memset(&o, 0, sizeof o);
    o.device_total_bytes = 150109880320ull; /* the H200 as torch reports it (fixtures README) */
    od_diagnosis *d = NULL;
    od_error err;
    assert_int_equal(od_diagnose_with(&in, 1, &o, &d, &err), OD_OK);
    assert_int_equal(d->verdict, OD_VERDICT_LEAK);
    assert_true(d->n_do_now >= 1);
    assert_non_null(strstr(d->do_now[0].action, "train.py:346"));
    assert_int_equal(d->do_now[0].check.method, OD_CHECK_ARITHMETIC);
    assert_non_null(strstr(d->do_now[0].check.detail, "more steps"));
    od_diagnosis_free(d);
    od_snapshot_free(s);
}

/* Pre-2.1 wordings: no "do now" item names a setting their torch lacks; the upgrade that
 * brings it is long term. torch 1.x has no expandable_segments (2.1) nor
 * garbage_collection_threshold (1.12); 2.0's wording (the 1.10-2.0 one with
 * torch.cuda.OutOfMemoryError) has no expandable_segments. */
static void version_aware(void **state)
{
    (void)state;
    const char *files[] = {"tests/data/messages/torch1x_capacity.txt", "tests/data/messages/torch110_fragmentation.txt"};
    for (int k = 0; k < 2; k++) {
        message msg = read_message(files[k]);
        od_diag_input in = log_input(files[k], &msg);
        od_diagnosis *d = NULL;
        od_error err;
        assert_int_equal(od_diagnose_with(&in, 1, NULL, &d, &err), OD_OK);
        assert_false(do_now_names(d, "expandable_segments"));
        assert_false(do_now_names(d, "garbage_collection_threshold"));
        assert_true(evidence_has(d, "inferred from the OOM message's wording"));
        if (k == 1) {
            int upgrade = 0;
            for (size_t i = 0; i < d->n_long_term; i++)
                upgrade |= strstr(d->long_term[i].action, "upgrade to torch >= 2.1") != NULL;
            assert_true(upgrade);
            assert_true(do_now_names(d, "max_split_size_mb")); /* 1.10 has it */
        }
        od_diagnosis_free(d);
        free_message(&msg);
    }
    /* A torch 2.0 message (the 1.10-2.0 wording, with 2.0's exception name). */
    static const char t20[] =
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total "
        "capacity; 60.00 GiB already allocated; 1.50 GiB free; 76.00 GiB reserved in total by PyTorch) If reserved "
        "memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for "
        "Memory Management and PYTORCH_CUDA_ALLOC_CONF\n";
    message msg;
    msg.text = malloc(sizeof t20);
    memcpy(msg.text, t20, sizeof t20);
    msg.len = sizeof t20 - 1;
    od_error err;
    assert_int_equal(od_triage_parse(msg.text, msg.len, &msg.tri, &err), OD_OK);
    assert_int_equal(msg.tri->n_reports, 1);
    assert_int_equal(msg.tri->reports[0].verdict, OD_OOM_FRAGMENTATION);
    od_diag_input in = log_input("t20", &msg);
    od_diagnosis *d = NULL;
    assert_int_equal(od_diagnose_with(&in, 1, NULL, &d, &err), OD_OK);
    assert_false(do_now_names(d, "expandable_segments"));
    od_diagnosis_free(d);
    /* The same message with --torch-version 2.4 gets the setting now. */
    od_diag_options o;
    memset(&o, 0, sizeof o);
    o.torch_version = "2.4.1";
    assert_int_equal(od_diagnose_with(&in, 1, &o, &d, &err), OD_OK);
    assert_true(do_now_names(d, "expandable_segments"));
    od_diagnosis_free(d);
    free_message(&msg);
}

/* The MPS cap is ratio x the recommended working set, the ratio 1.7 by default and at most
 * 2.0 (MPSAllocator.mm): advising "1.7" would change nothing. mps_watermark.txt prints max
 * allowed 27.20 GB (16 GB x 1.7), 25.81 GB allocated, 384 KB other, 2.00 GB requested: at
 * 2.0 the cap is 16 x 2.0 = 32.00 GB, which holds 25.81 + 0.0004 + 2.00 = 27.81 GB. */
static void mps_watermark_raised_to_the_most(void **state)
{
    (void)state;
    message msg = read_message("tests/data/messages/mps_watermark.txt");
    od_diag_input in = log_input("log", &msg);
    od_diagnosis *d = NULL;
    od_error err;
    assert_int_equal(od_diagnose_with(&in, 1, NULL, &d, &err), OD_OK);
    assert_true(d->n_do_now >= 1);
    const od_remedy *m = &d->do_now[0];
    assert_non_null(strstr(m->action, "PYTORCH_MPS_HIGH_WATERMARK_RATIO=2.0"));
    assert_null(strstr(m->action, "e.g. 1.7"));
    assert_int_equal(m->check.method, OD_CHECK_ARITHMETIC);
    assert_int_equal(m->check.avoids_oom, 1);
    assert_non_null(strstr(m->check.detail, "to 32.00 GiB"));
    assert_non_null(strstr(m->check.detail, "27.81 GiB needed"));
    assert_non_null(strstr(d->verify, "RATIO=2.0"));
    od_diagnosis_free(d);
    free_message(&msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cap_from_the_whole_step),
        cmocka_unit_test(frag_settings_tried_not_advised),
        cmocka_unit_test(leak_site_first),
        cmocka_unit_test(version_aware),
        cmocka_unit_test(mps_watermark_raised_to_the_most),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
