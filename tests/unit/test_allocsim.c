/* test_allocsim.c - the allocator model on hand-built request sequences, for the policy
 * corners no recorded fixture exercises. Expected values are worked out by hand from
 * the allocator's rules (ALLOCATOR.md / CUDACachingAllocator.cpp), written next to each. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "model/allocsim.h"

#define MiB (1ull << 20)

typedef struct {
    od_seg_event ev[64];
    int n;
} evlog;

static void logev(void *ctx, const od_seg_event *ev)
{
    evlog *l = ctx;
    if (l->n < 64) l->ev[l->n++] = *ev;
}

static od_allocsim *mk(const char *conf, uint64_t cap, evlog *log)
{
    od_allocsim_config c;
    od_allocsim_config_default(&c);
    if (conf) assert_int_equal(od_allocsim_config_parse(&c, conf, NULL), OD_OK);
    c.allowed_bytes = cap;
    od_allocsim *s = NULL;
    assert_int_equal(od_allocsim_create(&c, &s, NULL), OD_OK);
    memset(log, 0, sizeof *log);
    od_allocsim_set_hooks(s, NULL, logev, log);
    return s;
}

static uint64_t must_alloc(od_allocsim *s, uint64_t size, uint64_t stream)
{
    uint64_t a;
    int oom;
    assert_int_equal(od_allocsim_malloc(s, size, stream, 0, 0, &a, &oom), OD_OK);
    assert_int_equal(oom, 0);
    assert_true(a != 0);
    return a;
}

static void expect_events(const evlog *l, const char *kinds, const uint64_t *sizes_mib)
{
    /* kinds: A alloc, F free, M map, U unmap */
    int n = (int)strlen(kinds);
    assert_int_equal(l->n, n);
    for (int i = 0; i < n; i++) {
        int k = kinds[i] == 'A' ? OD_SEG_ALLOC : kinds[i] == 'F' ? OD_SEG_FREE : kinds[i] == 'M' ? OD_SEG_MAP : OD_SEG_UNMAP;
        assert_int_equal(l->ev[i].kind, k);
        assert_true(l->ev[i].size == sizes_mib[i] * MiB);
    }
}

static od_allocsim_stats stats(const od_allocsim *s)
{
    od_allocsim_stats st;
    od_allocsim_get_stats(s, &st);
    return st;
}

static void rounding(void **state)
{
    (void)state;
    od_allocsim_config c;
    od_allocsim_config_default(&c);
    assert_true(od_allocsim_round_size(&c, 1) == 512);
    assert_true(od_allocsim_round_size(&c, 513) == 1024);
    assert_true(od_allocsim_round_size(&c, MiB + 1) == MiB + 512);
    /* 4 divisions: [1, 2) MiB in 256 KiB steps, [2, 4) MiB in 512 KiB steps */
    assert_int_equal(od_allocsim_config_parse(&c, "roundup_power2_divisions:4", NULL), OD_OK);
    assert_true(od_allocsim_round_size(&c, MiB + 1) == MiB + 256 * 1024);
    assert_true(od_allocsim_round_size(&c, 3 * MiB + 5) == 3 * MiB + 512 * 1024);
    assert_true(od_allocsim_round_size(&c, 4 * MiB) == 4 * MiB);
    /* below 512 x divisions the plain 512 B rounding applies */
    assert_true(od_allocsim_round_size(&c, 1000) == 1024);
    /* list form: 1 MiB interval 2 divisions (512 KiB steps), from 2 MiB up 8 */
    od_allocsim_config_default(&c);
    assert_int_equal(od_allocsim_config_parse(&c, "roundup_power2_divisions:[1:2,>:8]", NULL), OD_OK);
    assert_true(od_allocsim_round_size(&c, MiB + 1) == MiB + 512 * 1024);
    assert_true(od_allocsim_round_size(&c, 2 * MiB + 1) == 2 * MiB + 256 * 1024);
    /* segment sizes: small 2 MiB, 1-10 MiB in 20 MiB, larger rounded to 2 MiB */
    assert_true(od_allocsim_segment_size(512) == 2 * MiB);
    assert_true(od_allocsim_segment_size(MiB) == 2 * MiB);
    assert_true(od_allocsim_segment_size(MiB + 512) == 20 * MiB);
    assert_true(od_allocsim_segment_size(10 * MiB) == 10 * MiB);
    assert_true(od_allocsim_segment_size(11 * MiB) == 12 * MiB);
}

static void config_errors(void **state)
{
    (void)state;
    od_allocsim_config c;
    od_error err;
    od_allocsim_config_default(&c);
    assert_int_equal(od_allocsim_config_parse(&c, "max_split_size_mb:0", &err), OD_ERR_ARG);
    assert_non_null(strstr(err.msg, "max_split_size_mb"));
    assert_int_equal(od_allocsim_config_parse(&c, "max_split_size_mb:20", &err), OD_ERR_ARG);
    assert_int_equal(od_allocsim_config_parse(&c, "warp_drive:True", &err), OD_ERR_ARG);
    assert_non_null(strstr(err.msg, "warp_drive"));
    assert_int_equal(od_allocsim_config_parse(&c, "garbage_collection_threshold:1.5", &err), OD_ERR_ARG);
    assert_int_equal(od_allocsim_config_parse(&c, "roundup_power2_divisions:3", &err), OD_ERR_ARG);
    assert_int_equal(od_allocsim_config_parse(&c, "expandable_segments:maybe", &err), OD_ERR_ARG);
    assert_int_equal(od_allocsim_config_parse(&c, "expandable_segments", &err), OD_ERR_ARG);
    assert_int_equal(od_allocsim_config_parse(&c, "expandable_segments:True,max_split_size_mb:128,"
                                                  "garbage_collection_threshold:0.6", &err), OD_OK);
    assert_true(c.expandable_segments == 1);
    assert_true(c.max_split_size == (int64_t)(128 * MiB));
    assert_true(c.garbage_collection_threshold > 0.59 && c.garbage_collection_threshold < 0.61);
}

static void split_rules(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk(NULL, 0, &l);
    /* 11 MiB: a 12 MiB segment; remainder 1 MiB is not > 1 MiB, so the block keeps it */
    uint64_t k = must_alloc(s, 11 * MiB, 0);
    assert_true(stats(s).allocated_bytes == 12 * MiB);
    assert_true(od_allocsim_block_size(s, k) == 12 * MiB);
    assert_true(od_allocsim_allocated_bytes(s) == 12 * MiB);
    /* 5 MiB in a 20 MiB segment: remainder 15 MiB > 1 MiB is split off */
    uint64_t a = must_alloc(s, 5 * MiB, 0);
    assert_true(stats(s).allocated_bytes == 5 * MiB + 12 * MiB);
    /* small pool: 1000 B -> 1024 B block in a 2 MiB segment */
    uint64_t b = must_alloc(s, 1000, 0);
    assert_true(stats(s).allocated_bytes == 17 * MiB + 1024);
    /* the next small request takes the low end of the split remainder */
    uint64_t c = must_alloc(s, 512, 0);
    assert_true(c == b + 1024);
    /* the 15 MiB remainder serves 3 MiB, right after the first block */
    uint64_t d = must_alloc(s, 3 * MiB, 0);
    assert_true(d == a + 5 * MiB);
    assert_true(od_allocsim_block_size(s, d) == 3 * MiB);
    assert_true(od_allocsim_block_size(s, d + 512) == 0);
    expect_events(&l, "AAA", (const uint64_t[]){ 12, 20, 2 });
    assert_true(stats(s).reserved_bytes == 34 * MiB);
    od_allocsim_free_sim(s);
}

static void best_fit_and_merge(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk(NULL, 0, &l);
    uint64_t x = must_alloc(s, 30 * MiB, 0);
    uint64_t y = must_alloc(s, 30 * MiB, 0);
    uint64_t z = must_alloc(s, 40 * MiB, 0);
    assert_int_equal(od_allocsim_free(s, x), OD_OK);
    assert_int_equal(od_allocsim_free(s, y), OD_OK);
    assert_int_equal(od_allocsim_free(s, z), OD_OK);
    /* equal sizes: the lower address wins; the driver hands out descending addresses */
    uint64_t w = must_alloc(s, 30 * MiB, 0);
    assert_true(w == (x < y ? x : y));
    /* smallest fitting block first: 35 MiB does not fit 30, takes the 40 MiB one */
    uint64_t v = must_alloc(s, 35 * MiB, 0);
    assert_true(v == z);
    assert_true(stats(s).allocated_bytes == 65 * MiB);
    /* 40 - 35 = 5 MiB remainder > 1 MiB was split; freeing merges it back */
    assert_int_equal(od_allocsim_free(s, v), OD_OK);
    uint64_t u = must_alloc(s, 40 * MiB, 0);
    assert_true(u == z);
    expect_events(&l, "AAA", (const uint64_t[]){ 30, 30, 40 });
    assert_int_equal(od_allocsim_free(s, 12345), OD_ERR_ARG);
    od_allocsim_free_sim(s);
}

/* The free set's order is torch's (stream, size, address) whatever the model's index: a
 * request skips a smaller block of its own size class (24 MiB for 25), takes the lower of
 * two equal blocks of the next class, crosses a power of two (33 MiB takes 40), never
 * takes another stream's block, and empty_cache() releases stream by stream, smallest
 * first, lower address first among equals. */
static void free_order_across_classes_and_streams(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk(NULL, 0, &l);
    uint64_t a24 = must_alloc(s, 24 * MiB, 0);
    uint64_t a26 = must_alloc(s, 26 * MiB, 0);
    uint64_t b26 = must_alloc(s, 26 * MiB, 0);
    uint64_t a40 = must_alloc(s, 40 * MiB, 0);
    uint64_t s30 = must_alloc(s, 30 * MiB, 1);
    uint64_t s12 = must_alloc(s, 12 * MiB, 1);
    uint64_t all[] = { a24, a26, b26, a40, s30, s12 };
    for (int i = 0; i < 6; i++) assert_int_equal(od_allocsim_free(s, all[i]), OD_OK);
    assert_true(b26 < a26); /* descending driver addresses */
    assert_true(must_alloc(s, 25 * MiB, 0) == b26);
    assert_true(must_alloc(s, 33 * MiB, 0) == a40);
    /* stream 0 has 24 and 26 MiB left; its 28 MiB request takes no stream-1 block */
    uint64_t n28 = must_alloc(s, 28 * MiB, 0);
    assert_true(n28 != s30 && n28 != s12);
    l.n = 0;
    od_allocsim_empty_cache(s);
    /* stream 0: 24, 26 (a26); stream 1: 12, 30 */
    expect_events(&l, "FFFF", (const uint64_t[]){ 24, 26, 12, 30 });
    assert_true(l.ev[0].addr == a24 && l.ev[1].addr == a26 && l.ev[2].addr == s12 && l.ev[3].addr == s30);
    od_allocsim_free_sim(s);
}

static void streams_do_not_share(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk(NULL, 0, &l);
    uint64_t x = must_alloc(s, 30 * MiB, 1);
    assert_int_equal(od_allocsim_free(s, x), OD_OK);
    uint64_t y = must_alloc(s, 30 * MiB, 2);
    assert_true(y != x);
    uint64_t z = must_alloc(s, 30 * MiB, 1);
    assert_true(z == x);
    expect_events(&l, "AA", (const uint64_t[]){ 30, 30 });
    assert_true(l.ev[0].stream == 1 && l.ev[1].stream == 2);
    od_allocsim_free_sim(s);
}

static void deferred_free(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk(NULL, 0, &l);
    uint64_t x = must_alloc(s, 30 * MiB, 0);
    /* record_stream: allocated bytes drop at once, the block waits for its events */
    assert_int_equal(od_allocsim_free_request(s, x, 1), OD_OK);
    assert_true(stats(s).allocated_bytes == 0);
    uint64_t y = must_alloc(s, 30 * MiB, 0);
    assert_true(y != x);
    int ignored = 1;
    assert_int_equal(od_allocsim_free_complete(s, x, &ignored), OD_OK);
    assert_int_equal(ignored, 0);
    uint64_t z = must_alloc(s, 30 * MiB, 0);
    assert_true(z == x);
    /* a pending block is drained by a release: a late completion is ignored */
    assert_int_equal(od_allocsim_free_request(s, z, 1), OD_OK);
    od_allocsim_empty_cache(s);
    assert_int_equal(od_allocsim_free_complete(s, z, &ignored), OD_OK);
    assert_int_equal(ignored, 1);
    expect_events(&l, "AAF", (const uint64_t[]){ 30, 30, 30 });
    od_allocsim_free_sim(s);
}

static void private_pools(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk(NULL, 0, &l);
    uint64_t x = must_alloc(s, 30 * MiB, 0);
    assert_int_equal(od_allocsim_free(s, x), OD_OK);
    uint64_t a;
    int oom;
    /* a graph's private pool never takes the default pool's cached block */
    assert_int_equal(od_allocsim_malloc(s, 30 * MiB, 0, 7, 0, &a, &oom), OD_OK);
    assert_true(a != x && !oom);
    assert_true(l.ev[1].pool == 7);
    assert_int_equal(od_allocsim_free(s, a), OD_OK);
    /* empty_cache leaves a live graph's pool alone */
    od_allocsim_empty_cache(s);
    expect_events(&l, "AAF", (const uint64_t[]){ 30, 30, 30 });
    assert_true(l.ev[2].addr == x);
    /* once the graph is destroyed its segments can go */
    od_allocsim_release_pool(s, 7);
    od_allocsim_empty_cache(s);
    assert_int_equal(l.n, 4);
    assert_true(l.ev[3].addr == a);
    assert_true(stats(s).reserved_bytes == 0);
    od_allocsim_free_sim(s);
}

/* During a capture (torch's captures_underway non-empty) a failed request does not
 * release every cached segment: with the cached default-pool segment still there, the
 * capture's request fails under the cap; outside a capture the same request succeeds. */
static void capture_skips_full_release(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk(NULL, 60 * MiB, &l);
    uint64_t x = must_alloc(s, 30 * MiB, 0);
    assert_int_equal(od_allocsim_free(s, x), OD_OK);
    uint64_t a;
    int oom;
    assert_int_equal(od_allocsim_malloc(s, 40 * MiB, 0, 7, OD_SIM_CAPTURING, &a, &oom), OD_OK);
    assert_int_equal(oom, 1);
    /* a default-pool request during the capture does not release either */
    assert_int_equal(od_allocsim_malloc(s, 40 * MiB, 1, 0, OD_SIM_CAPTURING, &a, &oom), OD_OK);
    assert_int_equal(oom, 1);
    expect_events(&l, "A", (const uint64_t[]){ 30 });
    /* the capture ended: the release frees the cached 30 MiB, then 40 MiB fits */
    assert_int_equal(od_allocsim_malloc(s, 40 * MiB, 1, 0, 0, &a, &oom), OD_OK);
    assert_int_equal(oom, 0);
    expect_events(&l, "AFA", (const uint64_t[]){ 30, 30, 40 });
    od_allocsim_free_sim(s);
}

/* torch 2.11's alloc_block maps expandable segments for graph private pools too: one
 * reservation per (stream, pool), so the private pool's request maps its own page. */
static void expandable_private_pool(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk("expandable_segments:True", 0, &l);
    uint64_t a = must_alloc(s, 5 * MiB, 0);
    uint64_t b;
    int oom;
    assert_int_equal(od_allocsim_malloc(s, 5 * MiB, 0, 3, 0, &b, &oom), OD_OK);
    assert_int_equal(oom, 0);
    expect_events(&l, "MM", (const uint64_t[]){ 20, 20 });
    assert_true(l.ev[0].pool == 0 && l.ev[1].pool == 3);
    /* different reservations: not the default pool's free 15 MiB after a */
    assert_true(b != a + 5 * MiB);
    od_allocsim_free_sim(s);
}

/* The text form goes back to the same policy: parse(format(x)) == x. */
static void config_format_roundtrip(void **state)
{
    (void)state;
    const char *confs[] = {
        "",
        "expandable_segments:True",
        "expandable_segments:True,max_split_size_mb:128,garbage_collection_threshold:0.6",
        "max_non_split_rounding_mb:40,max_split_size_mb:21",
        "garbage_collection_threshold:0.123456789012345",
        "roundup_power2_divisions:4",
        "roundup_power2_divisions:[1:2,256:4,>:8]",
        "roundup_power2_divisions:[64:1,>:16],expandable_segments:False",
    };
    for (size_t i = 0; i < sizeof confs / sizeof confs[0]; i++) {
        od_allocsim_config x, y;
        od_allocsim_config_default(&x);
        assert_int_equal(od_allocsim_config_parse(&x, confs[i], NULL), OD_OK);
        char text[512];
        size_t len = od_allocsim_config_format(&x, text, sizeof text);
        assert_int_equal(len, strlen(text));
        od_allocsim_config_default(&y);
        assert_int_equal(od_allocsim_config_parse(&y, text, NULL), OD_OK);
        assert_true(x.max_split_size == y.max_split_size);
        assert_true(x.max_non_split_rounding == y.max_non_split_rounding);
        assert_true(x.garbage_collection_threshold == y.garbage_collection_threshold);
        assert_int_equal(x.expandable_segments, y.expandable_segments);
        assert_memory_equal(x.roundup_power2_divisions, y.roundup_power2_divisions,
                            sizeof x.roundup_power2_divisions);
        assert_true(od_allocsim_config_same_policy(&x, &y));
    }
    /* only what differs from the defaults is written */
    od_allocsim_config c;
    od_allocsim_config_default(&c);
    char text[64];
    assert_int_equal(od_allocsim_config_format(&c, text, sizeof text), 0);
    assert_string_equal(text, "");
    c.allowed_bytes = 1ull << 30;
    assert_int_equal(od_allocsim_config_format(&c, text, sizeof text), 0);
    assert_int_equal(od_allocsim_config_parse(&c, "garbage_collection_threshold:0.6,expandable_segments:True", NULL), OD_OK);
    assert_int_equal(od_allocsim_config_format(&c, text, sizeof text), 57);
    assert_string_equal(text, "expandable_segments:True,garbage_collection_threshold:0.6");
    /* like snprintf: the needed length, a truncated NUL-terminated text */
    char small[10];
    assert_int_equal(od_allocsim_config_format(&c, small, sizeof small), 57);
    assert_string_equal(small, "expandabl");
    assert_int_equal(od_allocsim_config_format(&c, NULL, 0), 57);
}

/* Spelled-out defaults are the same policy; any real difference is not. */
static void config_same_policy(void **state)
{
    (void)state;
    od_allocsim_config a, b;
    od_allocsim_config_default(&a);
    od_allocsim_config_default(&b);
    assert_int_equal(od_allocsim_config_parse(&b, "max_non_split_rounding_mb:20,roundup_power2_divisions:1,"
                                                  "expandable_segments:False", NULL), OD_OK);
    b.allowed_bytes = 1ull << 30;
    assert_true(od_allocsim_config_same_policy(&a, &b));
    b.max_split_size = 0; /* a recorded "unset" */
    assert_true(od_allocsim_config_same_policy(&a, &b));
    assert_int_equal(od_allocsim_config_parse(&b, "max_split_size_mb:128", NULL), OD_OK);
    assert_false(od_allocsim_config_same_policy(&a, &b));
    od_allocsim_config_default(&b);
    assert_int_equal(od_allocsim_config_parse(&b, "roundup_power2_divisions:[1:2,>:0]", NULL), OD_OK);
    assert_false(od_allocsim_config_same_policy(&a, &b));
}

static void release_and_retry_under_cap(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk(NULL, 80 * MiB, &l);
    uint64_t a = must_alloc(s, 30 * MiB, 0);
    must_alloc(s, 30 * MiB, 0);
    assert_int_equal(od_allocsim_free(s, a), OD_OK);
    /* 60 + 40 > 80: the unsplit cached 30 MiB segment is released, then 30 + 40 fits */
    assert_int_equal(od_allocsim_would_release(s, 40 * MiB, 0, 0, 0), 1);
    assert_int_equal(od_allocsim_would_release(s, 30 * MiB, 0, 0, 0), 0);
    must_alloc(s, 40 * MiB, 0);
    expect_events(&l, "AAFA", (const uint64_t[]){ 30, 30, 30, 40 });
    assert_true(stats(s).num_alloc_retries == 1);
    /* nothing left to release: OOM, state unchanged */
    uint64_t b;
    int oom;
    assert_int_equal(od_allocsim_malloc(s, 20 * MiB, 0, 0, 0, &b, &oom), OD_OK);
    assert_int_equal(oom, 1);
    assert_true(stats(s).num_ooms == 1);
    assert_true(stats(s).reserved_bytes == 70 * MiB);
    od_allocsim_free_sim(s);
}

static void max_split_size(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk("max_split_size_mb:64", 0, &l);
    uint64_t big = must_alloc(s, 100 * MiB, 0);
    assert_int_equal(od_allocsim_free(s, big), OD_OK);
    /* a request below max_split_size never takes an oversize block */
    uint64_t a = must_alloc(s, 30 * MiB, 0);
    assert_true(a != big);
    /* 70 MiB >= 64: 100 MiB is not below 70 + 20, so no */
    uint64_t b = must_alloc(s, 70 * MiB, 0);
    assert_true(b != big);
    /* 90 MiB: 100 < 90 + 20, taken whole (oversize blocks are not split) */
    uint64_t c = must_alloc(s, 90 * MiB, 0);
    assert_true(c == big);
    assert_true(stats(s).allocated_bytes == 30 * MiB + 70 * MiB + 100 * MiB);
    expect_events(&l, "AAA", (const uint64_t[]){ 100, 30, 70 });
    od_allocsim_free_sim(s);
}

static void release_available_cached_blocks(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk("max_split_size_mb:64", 150 * MiB, &l);
    uint64_t big = must_alloc(s, 100 * MiB, 0);
    must_alloc(s, 30 * MiB, 0);
    assert_int_equal(od_allocsim_free(s, big), OD_OK);
    /* 70 MiB cannot use the 100 MiB block; 130 + 70 > 150; the oversize block at or
     * above the request is released alone (not a full release: no retry counted) */
    must_alloc(s, 70 * MiB, 0);
    expect_events(&l, "AAFA", (const uint64_t[]){ 100, 30, 100, 70 });
    assert_true(stats(s).num_alloc_retries == 0);
    od_allocsim_free_sim(s);

    /* no single block is large enough: oversize blocks go largest first until the
     * released bytes cover the request */
    s = mk("max_split_size_mb:64", 250 * MiB, &l);
    uint64_t p = must_alloc(s, 66 * MiB, 0);
    uint64_t q = must_alloc(s, 80 * MiB, 0);
    must_alloc(s, 100 * MiB, 0);
    assert_int_equal(od_allocsim_free(s, p), OD_OK);
    assert_int_equal(od_allocsim_free(s, q), OD_OK);
    /* 120 MiB: 246 + 120 > 250; release 80 (80 < 120), then 66 (146 >= 120) */
    must_alloc(s, 120 * MiB, 0);
    expect_events(&l, "AAAFFA", (const uint64_t[]){ 66, 80, 100, 80, 66, 120 });
    od_allocsim_free_sim(s);
}

static void garbage_collection(void **state)
{
    (void)state;
    evlog l;
    /* with GC at 0.5 of a 120 MiB cap: reserved 66 > 60, the block at least as old as
     * the average goes (X: age 2, Y: age 1, average 1.5) and that already covers the
     * 6 MiB target; then 36 + 40 fits */
    od_allocsim *s = mk("garbage_collection_threshold:0.5", 120 * MiB, &l);
    uint64_t x = must_alloc(s, 30 * MiB, 0);   /* large-pool get_free_block call 1 */
    uint64_t y = must_alloc(s, 24 * MiB, 0);   /* call 2 */
    assert_int_equal(od_allocsim_free(s, x), OD_OK); /* cached at count 2 */
    must_alloc(s, 12 * MiB, 1);                /* call 3 (other stream: no reuse) */
    assert_int_equal(od_allocsim_free(s, y), OD_OK); /* cached at count 3 */
    must_alloc(s, 40 * MiB, 0);                /* call 4 */
    expect_events(&l, "AAAFA", (const uint64_t[]){ 30, 24, 12, 30, 40 });
    assert_true(l.ev[3].addr == x);
    od_allocsim_free_sim(s);

    /* the same without GC: the cap forces a full release of both cached blocks,
     * in (stream, size, address) order */
    s = mk(NULL, 100 * MiB, &l);
    x = must_alloc(s, 30 * MiB, 0);
    y = must_alloc(s, 24 * MiB, 0);
    assert_int_equal(od_allocsim_free(s, x), OD_OK);
    must_alloc(s, 12 * MiB, 1);
    assert_int_equal(od_allocsim_free(s, y), OD_OK);
    must_alloc(s, 40 * MiB, 0);
    expect_events(&l, "AAAFFA", (const uint64_t[]){ 30, 24, 12, 24, 30, 40 });

    /* GC is off without a cap, whatever the threshold */
    od_allocsim_free_sim(s);
    s = mk("garbage_collection_threshold:0.5", 0, &l);
    x = must_alloc(s, 30 * MiB, 0);
    assert_int_equal(od_allocsim_free(s, x), OD_OK);
    must_alloc(s, 40 * MiB, 0);
    expect_events(&l, "AA", (const uint64_t[]){ 30, 40 });
    od_allocsim_free_sim(s);
}

static void expandable_segments(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk("expandable_segments:True", 0, &l);
    /* 5 MiB maps one 20 MiB page; the 15 MiB rest stays free (split at >= 512 B) */
    uint64_t a = must_alloc(s, 5 * MiB, 0);
    /* 30 MiB: the free 15 MiB block grows into the next page (15 more MiB -> one page) */
    uint64_t b = must_alloc(s, 30 * MiB, 0);
    assert_true(b == a + 5 * MiB);
    expect_events(&l, "MM", (const uint64_t[]){ 20, 20 });
    assert_true(l.ev[1].addr == l.ev[0].addr + 20 * MiB);
    assert_true(stats(s).reserved_bytes == 40 * MiB);
    /* a 5 MiB free tail is not a whole page: nothing to unmap */
    od_allocsim_empty_cache(s);
    assert_int_equal(l.n, 2);
    /* freeing everything merges one 40 MiB free block: both pages go in one unmap */
    assert_int_equal(od_allocsim_free(s, a), OD_OK);
    assert_int_equal(od_allocsim_free(s, b), OD_OK);
    od_allocsim_empty_cache(s);
    expect_events(&l, "MMU", (const uint64_t[]){ 20, 20, 40 });
    assert_true(stats(s).reserved_bytes == 0);
    /* small requests use 2 MiB pages in their own segment */
    must_alloc(s, 4096, 0);
    assert_int_equal(l.n, 4);
    assert_true(l.ev[3].kind == OD_SEG_MAP && l.ev[3].size == 2 * MiB);
    od_allocsim_free_sim(s);
}

static void expandable_cap_uses_segment_size(void **state)
{
    (void)state;
    evlog l;
    /* 50 MiB cap: 40 MiB mapped + 12 MiB request -> 52 > 50 although the free 5 MiB tail
     * means only 7 MiB more would be mapped: the cap is checked against the segment size */
    od_allocsim *s = mk("expandable_segments:True", 50 * MiB, &l);
    must_alloc(s, 35 * MiB, 0);
    uint64_t b;
    int oom;
    assert_int_equal(od_allocsim_malloc(s, 12 * MiB, 0, 0, 0, &b, &oom), OD_OK);
    assert_int_equal(oom, 1);
    od_allocsim_free_sim(s);
}

/* Synthetic addresses go downwards; once none is left a new segment fails like a
 * cudaMalloc on a full device, instead of handing out an address twice. */
static void address_space_runs_out(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk(NULL, 0, &l);
    uint64_t a = must_alloc(s, 100ull << 40, 0);
    uint64_t b;
    int oom;
    assert_int_equal(od_allocsim_malloc(s, 100ull << 40, 0, 0, 0, &b, &oom), OD_OK);
    assert_int_equal(oom, 1);
    assert_int_equal(l.n, 1);
    /* what still fits below gets its own range */
    uint64_t c = must_alloc(s, 30 * MiB, 0);
    assert_true(c + 30 * MiB <= a);
    od_allocsim_free_sim(s);
}

static void seeding(void **state)
{
    (void)state;
    evlog l;
    od_allocsim *s = mk(NULL, 0, &l);
    assert_int_equal(od_allocsim_seed_segment(s, 0x10000000, 20 * MiB, 0, 0, 0), OD_OK);
    /* a segment of a private pool serves only that pool */
    assert_int_equal(od_allocsim_seed_segment(s, 0x20000000, 20 * MiB, 0, 5, 0), OD_OK);
    assert_int_equal(od_allocsim_seed_block(s, 0x10000000 + 4 * MiB, 2 * MiB), OD_OK);
    assert_int_equal(od_allocsim_seed_block(s, 0x10000000 + 5 * MiB, MiB), OD_ERR_ARG);
    assert_true(stats(s).allocated_bytes == 2 * MiB);
    /* best fit among the two free pieces (4 MiB low, 14 MiB high) */
    assert_true(must_alloc(s, 3 * MiB, 0) == 0x10000000);
    assert_true(must_alloc(s, 6 * MiB, 0) == 0x10000000 + 6 * MiB);
    assert_int_equal(od_allocsim_free(s, 0x10000000 + 4 * MiB), OD_OK);
    assert_int_equal(l.n, 0);
    uint64_t p;
    int oom;
    assert_int_equal(od_allocsim_malloc(s, 12 * MiB, 0, 5, 0, &p, &oom), OD_OK);
    assert_true(p == 0x20000000 && !oom);
    assert_int_equal(od_allocsim_seed_block(s, 0x20000000 + 14 * MiB, MiB), OD_OK);
    assert_int_equal(l.n, 0);
    od_allocsim_free_sim(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rounding),
        cmocka_unit_test(config_errors),
        cmocka_unit_test(split_rules),
        cmocka_unit_test(best_fit_and_merge),
        cmocka_unit_test(free_order_across_classes_and_streams),
        cmocka_unit_test(streams_do_not_share),
        cmocka_unit_test(deferred_free),
        cmocka_unit_test(private_pools),
        cmocka_unit_test(capture_skips_full_release),
        cmocka_unit_test(expandable_private_pool),
        cmocka_unit_test(config_format_roundtrip),
        cmocka_unit_test(config_same_policy),
        cmocka_unit_test(release_and_retry_under_cap),
        cmocka_unit_test(max_split_size),
        cmocka_unit_test(release_available_cached_blocks),
        cmocka_unit_test(garbage_collection),
        cmocka_unit_test(expandable_segments),
        cmocka_unit_test(expandable_cap_uses_segment_size),
        cmocka_unit_test(address_space_runs_out),
        cmocka_unit_test(seeding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
