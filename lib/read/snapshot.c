/* snapshot.c - build the snapshot model while the pickle streams by.
 *
 * Trace entries, blocks and segments are absorbed by the pickle reader's dict hook the
 * moment each dict is complete, so a 1 M-entry trace never exists as a million Python-like
 * dicts: each becomes a 48-byte od_trace_entry, and every type error is reported at the
 * byte offset of the dict that holds it. */
#include "oomdoc/snapshot.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/u64map.h"
#include "read/pickle.h"
#include "base/reread.h"
#include "read/tracepass.h"

/* Sizes beyond this are not memory any GPU has: refused rather than summed. */
#define MAX_SANE_BYTES ((uint64_t)1 << 52)
#define MAX_RECORDS ((uint32_t)1 << 28)

enum { REC_TRACE = 1, REC_BLOCK = 2, REC_SEGMENT = 3 };
#define REC(kind, idx) (((uint32_t)(kind) << 28) | (uint32_t)(idx))
#define REC_KIND(r) ((r) >> 28)
#define REC_INDEX(r) ((r) & (MAX_RECORDS - 1))

enum field {
    F_UNKNOWN = 0,
    F_ACTION, F_ADDR, F_SIZE, F_STREAM, F_TIME_US, F_FRAMES, F_DEVICE_FREE,
    F_ADDRESS, F_TOTAL_SIZE, F_ALLOCATED_SIZE, F_ACTIVE_SIZE, F_REQUESTED_SIZE,
    F_SEGMENT_TYPE, F_SEGMENT_POOL_ID, F_IS_EXPANDABLE, F_BLOCKS, F_STATE, F_HISTORY,
    F_REAL_SIZE, F_DEVICE, F_FILENAME, F_NAME, F_LINE,
    F_COUNT,
    F_NONE = 255
};

static const char *const field_names[F_COUNT] = {
    "", "action", "addr", "size", "stream", "time_us", "frames", "device_free",
    "address", "total_size", "allocated_size", "active_size", "requested_size",
    "segment_type", "segment_pool_id", "is_expandable", "blocks", "state", "history",
    "real_size", "device", "filename", "name", "line",
};

static const char *const action_names[] = {
    "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
    "segment_map", "segment_unmap", "oom", "snapshot",
};

static const char *const state_names[] = {"inactive", "active_allocated", "active_pending_free"};

typedef struct strchunk {
    struct strchunk *next;
    size_t used, cap;
    char data[];
} strchunk;

/* Where a list of trace entries began, for passes that read the file again: the pickle
 * position of its first entry, and hashes of its entries (each CHECK_CHUNK of them and all)
 * that a pass must find again. */
#define CHECK_CHUNK ((size_t)1 << 16)

typedef struct list_start {
    size_t first;              /* its first entry's record index */
    od_pickle_position pos;
    uint64_t hash;             /* of its entries so far */
    uint64_t *chunk_hash;      /* after each CHECK_CHUNK entries */
    size_t n_chunks, cap_chunks;
    size_t n;                  /* its entries (so far) */
} list_start;

/* Storage owned by the snapshot (od_snapshot.priv). */
typedef struct {
    strchunk *strings;
    od_u64map str_copies;        /* pickle str value -> index into copies */
    const char **copies;
    size_t n_copies, cap_copies;
    od_trace_store *entries; /* every absorbed trace entry, in document order (a compact
                                stream when streamed) */
    od_trace_store *copied;  /* the traces, when they were not one run of entries each */
    int streamed;
    od_input *in;            /* streamed from a file: read again by the passes ... */
    od_ptree *tree;          /* ... into the first reading's tree, memo kept ... */
    struct loader_state *L;  /* ... by the loader's hook, whose caches they need */
    const list_start **device_start; /* by device: its list, or NULL when empty */
    int passes_open;
} storage;

/* Parser state while the pickle streams. */
typedef struct loader_state {
    od_snapshot *snap;
    storage *st;
    uint8_t *fields;       /* by pickle string id: field + 1, or F_NONE */
    size_t fields_cap;
    od_u64map actions;           /* action str value -> od_action */
    od_u64map states;            /* state str value -> od_block_state */
    od_u64map stacks;            /* frames list identity -> stack index */
    od_u64map frames;            /* frame dict identity -> frame index */
    size_t cap_frames, cap_stack_frames, cap_stacks;
    od_trace_store *entries;     /* st->entries */
    size_t n_entries;
    od_block *blocks;      /* in record order */
    size_t n_blocks, cap_blocks;
    od_segment *segs;      /* in record order; first_block indexes seg_blocks */
    size_t n_segs, cap_segs;
    uint32_t *seg_blocks;  /* block record indices per segment */
    size_t n_seg_blocks, cap_seg_blocks;
    od_pv last_keys[32];   /* the keys of the last absorbed-or-not dict ... */
    uint8_t last_fields[32]; /* ... their fields ... */
    uint32_t last_has;     /* ... and the set of fields present */
    int8_t last_pos[F_COUNT]; /* ... the pair each field is in (-1 absent, -2 repeated) */
    int last_trace_fast;   /* ... and whether absorb_trace_fast may read them */
    size_t last_npairs;
    uint8_t *action_of;    /* by string index: od_action + 1, 0 = not yet known */
    size_t action_cap;
    uint32_t *stack_cache; /* by container slot of a shared frames list: stack + 1 */
    size_t stack_cache_cap;
    int streamed;          /* od_snapshot_load_streamed: entries without stacks */
    int reread;            /* ... read again from the file: entries are not kept */
    struct list_start *starts; /* reread: where each list of trace entries began */
    size_t n_starts, cap_starts;
    struct od_trace_pass *pass; /* a pass reading the file again is taking entries */
} loader;


static const char *copy_str(loader *L, const od_ptree *t, od_pv v)
{
    uint32_t idx;
    if (od_u64map_get(&L->st->str_copies, v, &idx))
        return L->st->copies[idx];
    size_t len;
    const char *s = od_pv_str(t, v, &len);
    if (!s)
        return NULL;
    strchunk *c = L->st->strings;
    if (!c || c->cap - c->used < len + 1) {
        size_t cap = len + 1 > 65536 ? len + 1 : 65536;
        strchunk *nc = malloc(sizeof *nc + cap);
        if (!nc)
            return NULL;
        nc->used = 0;
        nc->cap = cap;
        nc->next = c;
        L->st->strings = c = nc;
    }
    char *copy = c->data + c->used;
    memcpy(copy, s, len + 1);
    c->used += len + 1;
    if (!od_grow((void **)&L->st->copies, &L->st->cap_copies, L->st->n_copies + 1, sizeof(char *)) ||
        !od_u64map_put(&L->st->str_copies, v, (uint32_t)L->st->n_copies))
        return NULL;
    L->st->copies[L->st->n_copies++] = copy;
    return copy;
}

/* Which field a dict key names (F_NONE for keys we do not read). */
static int field_of(loader *L, const od_ptree *t, od_pv key)
{
    uint32_t id = od_pv_str_index_fast(key);
    if (id == UINT32_MAX)
        return F_NONE;
    if (id < L->fields_cap && L->fields[id])
        return L->fields[id] == F_NONE ? F_NONE : L->fields[id] - 1;
    if (id >= L->fields_cap) {
        size_t nc = L->fields_cap ? L->fields_cap : 256;
        while (nc <= id)
            nc *= 2;
        uint8_t *nf = realloc(L->fields, nc);
        if (!nf)
            return F_NONE;
        memset(nf + L->fields_cap, 0, nc - L->fields_cap);
        L->fields = nf;
        L->fields_cap = nc;
    }
    const char *s = od_pv_str(t, key, NULL);
    int f = F_NONE;
    for (int i = 1; i < F_COUNT; i++)
        if (strcmp(s, field_names[i]) == 0)
            f = i;
    L->fields[id] = (uint8_t)(f == F_NONE ? F_NONE : f + 1);
    return f;
}

static int bad(od_error *err, const char *what, const char *field, const char *expected,
               const od_ptree *t, od_pv v)
{
    int64_t i;
    if (od_pv_typeof(t, v) == OD_PV_INT && od_pv_get_i64(t, v, &i))
        od_fail(err, OD_ERR_FORMAT, "%s '%s' must be %s, found %lld", what, field, expected, (long long)i);
    else
        od_fail(err, OD_ERR_FORMAT, "%s '%s' must be %s, found %s", what, field, expected,
                od_pv_type_name(od_pv_typeof(t, v)));
    return -1;
}

static int get_size(const od_ptree *t, od_pv v, const char *what, int f, uint64_t *out, od_error *err)
{
    if (!od_pv_get_u64(t, v, out))
        return bad(err, what, field_names[f], "a non-negative int", t, v);
    if (*out > MAX_SANE_BYTES) {
        od_fail(err, OD_ERR_LIMIT, "%s '%s' of %llu bytes is absurd (more than 4 PiB)", what,
                field_names[f], (unsigned long long)*out);
        return -1;
    }
    return 0;
}

/* A frame dict -> frame index (cached by identity). */
static int frame_index(loader *L, const od_ptree *t, od_pv fd, uint32_t *out, od_error *err)
{
    uint32_t id = od_pv_identity(t, fd);
    if (id != UINT32_MAX && od_u64map_get(&L->frames, id, out))
        return 0;
    if (od_pv_typeof(t, fd) != OD_PV_DICT)
        return bad(err, "stack frame", "frames[]", "a dict", t, fd);
    od_frame fr = {"", "", 0};
    size_t n = od_pv_len(t, fd);
    for (size_t i = 0; i < n; i++) {
        od_pv k = od_pv_dict_key(t, fd, i), v = od_pv_dict_value(t, fd, i);
        switch (field_of(L, t, k)) {
        case F_FILENAME:
        case F_NAME: {
            const char *s = copy_str(L, t, v);
            if (!s) {
                if (od_pv_typeof(t, v) != OD_PV_STR && od_pv_typeof(t, v) != OD_PV_BYTES)
                    return bad(err, "stack frame", field_names[field_of(L, t, k)], "a str", t, v);
                od_fail(err, OD_ERR_NOMEM, "out of memory");
                return -1;
            }
            if (field_of(L, t, k) == F_FILENAME)
                fr.filename = s;
            else
                fr.name = s;
            break;
        }
        case F_LINE:
            if (!od_pv_get_i64(t, v, &fr.line))
                return bad(err, "stack frame", "line", "an int", t, v);
            break;
        default:
            break;
        }
    }
    od_snapshot *s = L->snap;
    if (!od_grow((void **)&s->frames, &L->cap_frames, s->n_frames + 1, sizeof *s->frames))
        goto nomem;
    *out = (uint32_t)s->n_frames;
    s->frames[s->n_frames++] = fr;
    if (id != UINT32_MAX && !od_u64map_put(&L->frames, id, *out))
        goto nomem;
    return 0;
nomem:
    od_fail(err, OD_ERR_NOMEM, "out of memory");
    return -1;
}

/* A frames list -> stack index (cached by identity: equal lists are shared). */
static int stack_index_slow(loader *L, const od_ptree *t, od_pv list, uint32_t *out, od_error *err);

/* A frames list -> stack index. Shared lists keep their slot for the tree's lifetime, so
 * the slot indexes a direct cache; anything else takes the general path. */
static int stack_index(loader *L, const od_ptree *t, od_pv list, uint32_t *out, od_error *err)
{
    uint32_t slot = od_pv_cont_index_fast(list);
    if (slot < L->stack_cache_cap && L->stack_cache[slot]) {
        *out = L->stack_cache[slot] - 1;
        return 0;
    }
    int r = stack_index_slow(L, t, list, out, err);
    if (r == 0 && slot != UINT32_MAX && slot < (1u << 24) && od_pv_identity(t, list) == slot) {
        if (slot >= L->stack_cache_cap) {
            size_t nc = L->stack_cache_cap ? L->stack_cache_cap : 1024;
            while (nc <= slot)
                nc *= 2;
            uint32_t *n = realloc(L->stack_cache, nc * sizeof *n);
            if (!n)
                return 0; /* no cache: still correct */
            memset(n + L->stack_cache_cap, 0, (nc - L->stack_cache_cap) * sizeof *n);
            L->stack_cache = n;
            L->stack_cache_cap = nc;
        }
        L->stack_cache[slot] = *out + 1;
    }
    return r;
}

static int stack_index_slow(loader *L, const od_ptree *t, od_pv list, uint32_t *out, od_error *err)
{
    od_pv_type ty = od_pv_typeof(t, list);
    if (ty == OD_PV_NONE || ty == OD_PV_MISSING) {
        *out = 0;
        return 0;
    }
    if (ty != OD_PV_LIST && ty != OD_PV_TUPLE)
        return bad(err, "entry", "frames", "a list", t, list);
    size_t n = od_pv_len(t, list);
    if (n == 0) {
        *out = 0;
        return 0;
    }
    uint32_t id = od_pv_identity(t, list);
    if (od_u64map_get(&L->stacks, id, out))
        return 0;
    od_snapshot *s = L->snap;
    size_t first = s->n_stacks ? s->stacks[s->n_stacks - 1].first + s->stacks[s->n_stacks - 1].count : 0;
    if (!od_grow((void **)&s->stack_frames, &L->cap_stack_frames, first + n, sizeof(uint32_t)))
        goto nomem;
    for (size_t i = 0; i < n; i++) {
        uint32_t fi = 0; /* set whenever frame_index succeeds */
        if (frame_index(L, t, od_pv_item(t, list, i), &fi, err) < 0)
            return -1;
        s->stack_frames[first + i] = fi;
    }
    if (first + n > UINT32_MAX)
        goto nomem;
    if (!od_grow((void **)&s->stacks, &L->cap_stacks, s->n_stacks + 1, sizeof *s->stacks))
        goto nomem;
    *out = (uint32_t)s->n_stacks;
    s->stacks[s->n_stacks++] = (od_stack){(uint32_t)first, (uint32_t)n};
    if (!od_u64map_put(&L->stacks, id, *out))
        goto nomem;
    return 0;
nomem:
    od_fail(err, OD_ERR_NOMEM, "out of memory");
    return -1;
}

static int enum_of(loader *L, od_u64map *cache, const char *const *names, int n_names, int other,
                   const od_ptree *t, od_pv v, const char *what, const char *field, od_error *err)
{
    uint32_t e;
    if (od_u64map_get(cache, v, &e))
        return (int)e;
    const char *s = od_pv_str(t, v, NULL);
    if (!s || od_pv_typeof(t, v) != OD_PV_STR)
        return bad(err, what, field, "a str", t, v);
    e = (uint32_t)other;
    for (int i = 0; i < n_names; i++)
        if (strcmp(s, names[i]) == 0)
            e = (uint32_t)i;
    if (!od_u64map_put(cache, v, e)) {
        od_fail(err, OD_ERR_NOMEM, "out of memory");
        return -1;
    }
    return (int)e;
}

static uint64_t entry_hash(uint64_t h, const od_trace_entry *e)
{
    uint64_t x = e->addr * 0x9e3779b97f4a7c15ull ^ e->size * 0xc2b2ae3d27d4eb4full ^
                 e->time_us * 0x165667b19e3779f9ull ^ e->device_free * 0x27d4eb2f165667c5ull ^
                 (e->stream ^ ((uint64_t)e->action << 56)) * 0xd6e8feb86659fd93ull;
    h = (h ^ x ^ (x >> 29)) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

static int pass_take(loader *L, const od_trace_entry *e, uint32_t *record, od_error *err);

/* A reread load: the entry belongs to the list begun last, or begins one. 0 when out of memory. */
static int note_entry(loader *L, const od_ptree *t, const od_trace_entry *e)
{
    od_pickle_position pos;
    if (od_ptree_offer_position(t, &pos) && pos.first_in_list) {
        if (!od_grow((void **)&L->starts, &L->cap_starts, L->n_starts + 1, sizeof *L->starts))
            return 0;
        L->starts[L->n_starts++] = (list_start){.first = L->n_entries, .pos = pos};
    }
    if (!L->n_starts) /* an entry before any known list start: no pass can find it */
        return 1;
    list_start *ls = &L->starts[L->n_starts - 1];
    ls->hash = entry_hash(ls->hash, e);
    if (++ls->n % CHECK_CHUNK == 0) {
        if (!od_grow((void **)&ls->chunk_hash, &ls->cap_chunks, ls->n_chunks + 1, sizeof *ls->chunk_hash))
            return 0;
        ls->chunk_hash[ls->n_chunks++] = ls->hash;
    }
    return 1;
}

/* Keep entry e (as the loader's mode says) as the next record: the hook's answer. */
static int take_entry(loader *L, const od_ptree *t, const od_trace_entry *e, uint32_t *record, od_error *err)
{
    if (L->pass)
        return pass_take(L, e, record, err);
    if (L->n_entries >= MAX_RECORDS) {
        od_fail(err, OD_ERR_LIMIT, "too many trace entries");
        return -1;
    }
    if (L->reread ? !note_entry(L, t, e) : !od_trace_store_add(L->entries, e)) {
        od_fail(err, OD_ERR_NOMEM, "out of memory");
        return -1;
    }
    *record = REC(REC_TRACE, L->n_entries);
    L->n_entries++;
    return L->streamed ? OD_ABSORB | OD_ABSORB_FORGETTABLE : OD_ABSORB;
}

static int absorb_trace(loader *L, const od_ptree *t, const od_pv *kv, const uint8_t *fields,
                        size_t npairs, uint32_t *record, od_error *err)
{
    od_trace_entry e = {0};
    uint32_t seen = 0;
    for (size_t i = 0; i < npairs; i++) {
        od_pv v = kv[2 * i + 1];
        int f = fields[i];
        int64_t i64;
        if (f < F_COUNT)
            seen |= 1u << f;
        switch (f) {
        case F_ACTION: {
            /* Actions are a handful of strings: cache them by string index. */
            uint32_t si = od_pv_str_index_fast(v);
            int a;
            if (si < L->action_cap && L->action_of[si]) {
                a = L->action_of[si] - 1;
            } else {
                a = enum_of(L, &L->actions, action_names, OD_ACT_OTHER, OD_ACT_OTHER, t, v,
                            "trace entry", "action", err);
                if (a < 0)
                    return -1;
                if (si != UINT32_MAX && si < (1u << 20)) {
                    if (si >= L->action_cap) {
                        size_t nc = L->action_cap ? L->action_cap : 64;
                        while (nc <= si)
                            nc *= 2;
                        uint8_t *na = realloc(L->action_of, nc);
                        if (!na) {
                            od_fail(err, OD_ERR_NOMEM, "out of memory");
                            return -1;
                        }
                        memset(na + L->action_cap, 0, nc - L->action_cap);
                        L->action_of = na;
                        L->action_cap = nc;
                    }
                    L->action_of[si] = (uint8_t)(a + 1);
                }
            }
            e.action = (uint8_t)a;
            break;
        }
        case F_ADDR:
            if (od_pv_is_small_int(v) && od_pv_small_int(v) >= 0)
                e.addr = (uint64_t)od_pv_small_int(v);
            else if (!od_pv_get_u64(t, v, &e.addr))
                return bad(err, "trace entry", "addr", "a non-negative int", t, v);
            break;
        case F_SIZE:
            if (od_pv_is_small_int(v) && od_pv_small_int(v) >= 0 &&
                (uint64_t)od_pv_small_int(v) <= MAX_SANE_BYTES)
                e.size = (uint64_t)od_pv_small_int(v);
            else if (get_size(t, v, "trace entry", f, &e.size, err) < 0)
                return -1;
            break;
        case F_DEVICE_FREE:
            if (!od_pv_get_u64(t, v, &e.device_free))
                return bad(err, "trace entry", "device_free", "a non-negative int", t, v);
            break;
        case F_STREAM:
            if (od_pv_is_small_int(v)) {
                e.stream = (uint64_t)od_pv_small_int(v);
                break;
            }
            if (!od_pv_get_i64(t, v, &i64) && !od_pv_get_u64(t, v, &e.stream))
                return bad(err, "trace entry", "stream", "an int", t, v);
            if (od_pv_get_i64(t, v, &i64))
                e.stream = (uint64_t)i64;
            break;
        case F_TIME_US:
            if (od_pv_is_small_int(v) && od_pv_small_int(v) >= 0) {
                e.time_us = (uint64_t)od_pv_small_int(v);
                break;
            }
            if (!od_pv_get_i64(t, v, &i64) || i64 < 0)
                return bad(err, "trace entry", "time_us", "a non-negative int", t, v);
            e.time_us = (uint64_t)i64;
            break;
        case F_FRAMES: /* a streamed trace carries no stacks (tracepass.h) */
            if (!L->streamed && stack_index(L, t, v, &e.stack, err) < 0)
                return -1;
            break;
        default:
            break;
        }
    }
    /* Every release writes an entry's addr and size (an OOM's and a snapshot's too); a
     * block event without them would be read as a block at address 0 of 0 bytes. */
    for (int f = F_ADDR; e.action <= OD_ACT_SEGMENT_UNMAP && f <= F_SIZE; f++)
        if (!(seen & (1u << f))) {
            od_fail(err, OD_ERR_FORMAT, "trace entry '%s' has no '%s'", action_names[e.action], field_names[f]);
            return -1;
        }
    return take_entry(L, t, &e, record, err);
}

static int absorb_block(loader *L, const od_ptree *t, const od_pv *kv, const uint8_t *fields,
                        size_t npairs, uint32_t *record, od_error *err)
{
    od_block b = {UINT64_MAX, 0, UINT64_MAX, 0, OD_BLOCK_UNKNOWN};
    for (size_t i = 0; i < npairs; i++) {
        od_pv v = kv[2 * i + 1];
        int f = fields[i];
        switch (f) {
        case F_ADDRESS:
            if (!od_pv_get_u64(t, v, &b.address))
                return bad(err, "block", "address", "a non-negative int", t, v);
            break;
        case F_SIZE:
            if (get_size(t, v, "block", f, &b.size, err) < 0)
                return -1;
            break;
        case F_REQUESTED_SIZE:
            if (get_size(t, v, "block", f, &b.requested_size, err) < 0)
                return -1;
            break;
        case F_STATE: {
            int s = enum_of(L, &L->states, state_names, 3, OD_BLOCK_UNKNOWN, t, v, "block", "state", err);
            if (s < 0)
                return -1;
            b.state = (uint8_t)s;
            break;
        }
        case F_FRAMES:
            if (stack_index(L, t, v, &b.stack, err) < 0)
                return -1;
            break;
        case F_HISTORY: {
            /* torch 1.13: the block's allocation history, oldest first; the last entry is
             * the current allocation (as torch's own _memory_viz reads it). */
            if (od_pv_typeof(t, v) != OD_PV_LIST)
                return bad(err, "block", "history", "a list", t, v);
            if (od_pv_len(t, v) == 0)
                break;
            od_pv h = od_pv_item(t, v, od_pv_len(t, v) - 1);
            if (od_pv_typeof(t, h) != OD_PV_DICT)
                return bad(err, "block", "history[-1]", "a dict", t, h);
            for (size_t k = 0; k < od_pv_len(t, h); k++) {
                od_pv hv = od_pv_dict_value(t, h, k);
                int hf = field_of(L, t, od_pv_dict_key(t, h, k));
                if (hf == F_REAL_SIZE && b.requested_size == UINT64_MAX &&
                    get_size(t, hv, "block history", hf, &b.requested_size, err) < 0)
                    return -1;
                if (hf == F_FRAMES && b.stack == 0 && stack_index(L, t, hv, &b.stack, err) < 0)
                    return -1;
            }
            break;
        }
        default:
            break;
        }
    }
    if (L->n_blocks >= MAX_RECORDS ||
        !od_grow((void **)&L->blocks, &L->cap_blocks, L->n_blocks + 1, sizeof *L->blocks)) {
        od_fail(err, L->n_blocks >= MAX_RECORDS ? OD_ERR_LIMIT : OD_ERR_NOMEM, "too many blocks");
        return -1;
    }
    *record = REC(REC_BLOCK, L->n_blocks);
    L->blocks[L->n_blocks++] = b;
    return 1;
}

static int absorb_segment(loader *L, const od_ptree *t, const od_pv *kv, const uint8_t *fields,
                          size_t npairs, uint32_t *record, od_error *err)
{
    od_segment s = {0};
    s.is_large = 1;
    od_pv blocks = OD_PV_MISSING_VALUE;
    int64_t i64;
    for (size_t i = 0; i < npairs; i++) {
        od_pv v = kv[2 * i + 1];
        int f = fields[i];
        switch (f) {
        case F_DEVICE:
            if (!od_pv_get_i64(t, v, &s.device) || s.device < 0 || s.device > 1023)
                return bad(err, "segment", "device", "an int in 0..1023", t, v);
            break;
        case F_ADDRESS:
            if (!od_pv_get_u64(t, v, &s.address))
                return bad(err, "segment", "address", "a non-negative int", t, v);
            break;
        case F_TOTAL_SIZE:
            if (get_size(t, v, "segment", f, &s.total_size, err) < 0)
                return -1;
            break;
        case F_ALLOCATED_SIZE:
            if (get_size(t, v, "segment", f, &s.allocated_size, err) < 0)
                return -1;
            break;
        case F_ACTIVE_SIZE:
            if (get_size(t, v, "segment", f, &s.active_size, err) < 0)
                return -1;
            break;
        case F_REQUESTED_SIZE:
            if (get_size(t, v, "segment", f, &s.requested_size, err) < 0)
                return -1;
            break;
        case F_STREAM:
            if (od_pv_get_i64(t, v, &i64))
                s.stream = (uint64_t)i64;
            else if (!od_pv_get_u64(t, v, &s.stream))
                return bad(err, "segment", "stream", "an int", t, v);
            break;
        case F_SEGMENT_TYPE: {
            const char *ty = od_pv_str(t, v, NULL);
            if (!ty)
                return bad(err, "segment", "segment_type", "a str", t, v);
            s.is_large = strcmp(ty, "small") != 0;
            break;
        }
        case F_SEGMENT_POOL_ID:
            if (od_pv_len(t, v) != 2 || !od_pv_get_i64(t, od_pv_item(t, v, 0), &s.pool_id[0]) ||
                !od_pv_get_i64(t, od_pv_item(t, v, 1), &s.pool_id[1]))
                return bad(err, "segment", "segment_pool_id", "a pair of ints", t, v);
            break;
        case F_IS_EXPANDABLE:
            if (!od_pv_get_bool(t, v, &s.is_expandable))
                return bad(err, "segment", "is_expandable", "a bool", t, v);
            break;
        case F_FRAMES:
            if (stack_index(L, t, v, &s.stack, err) < 0)
                return -1;
            break;
        case F_BLOCKS:
            blocks = v;
            break;
        default:
            break;
        }
    }
    if (od_pv_typeof(t, blocks) != OD_PV_LIST)
        return bad(err, "segment", "blocks", "a list", t, blocks);
    size_t n = od_pv_len(t, blocks);
    if (!od_grow((void **)&L->seg_blocks, &L->cap_seg_blocks, L->n_seg_blocks + n, sizeof(uint32_t)))
        goto nomem;
    s.first_block = L->n_seg_blocks;
    s.n_blocks = n;
    uint64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        od_pv bv = od_pv_item(t, blocks, i);
        uint32_t r = od_pv_record(t, bv);
        if (r == UINT32_MAX || REC_KIND(r) != REC_BLOCK)
            return bad(err, "segment", "blocks[]", "a block dict with 'size' and 'state'", t, bv);
        od_block *b = &L->blocks[REC_INDEX(r)];
        if (b->address == UINT64_MAX) /* torch 1.13: blocks are laid end to end */
            b->address = s.address + offset;
        if (b->requested_size == UINT64_MAX)
            b->requested_size = b->size;
        offset += b->size;
        if (b->address < s.address || b->address - s.address > s.total_size ||
            b->size > s.total_size - (b->address - s.address)) {
            od_fail(err, OD_ERR_FORMAT, "segment at 0x%llx: block at 0x%llx of %llu bytes lies outside "
                                        "the segment's %llu bytes",
                    (unsigned long long)s.address, (unsigned long long)b->address,
                    (unsigned long long)b->size, (unsigned long long)s.total_size);
            return -1;
        }
        L->seg_blocks[L->n_seg_blocks++] = REC_INDEX(r);
    }
    if (L->n_segs >= MAX_RECORDS || !od_grow((void **)&L->segs, &L->cap_segs, L->n_segs + 1, sizeof *L->segs))
        goto nomem;
    *record = REC(REC_SEGMENT, L->n_segs);
    L->segs[L->n_segs++] = s;
    return 1;
nomem:
    od_fail(err, OD_ERR_NOMEM, "out of memory");
    return -1;
}

/* The common trace entry in straight-line code, by the field positions of the last key
 * sequence: every value of the usual kind (a known action, small non-negative ints, a
 * frames list already seen). Returns the hook's answer when done (take_entry), 0 to leave
 * it to absorb_trace. */
static int absorb_trace_fast(loader *L, const od_ptree *t, const od_pv *kv, uint32_t *record, od_error *err)
{
    const int8_t *pos = L->last_pos;
    od_trace_entry e = {0};
    od_pv v = kv[2 * pos[F_ACTION] + 1];
    uint32_t si = od_pv_str_index_fast(v);
    if (si >= L->action_cap || !L->action_of[si] || pos[F_DEVICE_FREE] != -1 || pos[F_ADDR] < 0 || pos[F_SIZE] < 0)
        return 0;
    e.action = (uint8_t)(L->action_of[si] - 1);
    v = kv[2 * pos[F_ADDR] + 1];
    if (!od_pv_is_small_int(v) || od_pv_small_int(v) < 0)
        return 0;
    e.addr = (uint64_t)od_pv_small_int(v);
    v = kv[2 * pos[F_SIZE] + 1];
    if (!od_pv_is_small_int(v) || od_pv_small_int(v) < 0 || (uint64_t)od_pv_small_int(v) > MAX_SANE_BYTES)
        return 0;
    e.size = (uint64_t)od_pv_small_int(v);
    if (pos[F_STREAM] >= 0) {
        v = kv[2 * pos[F_STREAM] + 1];
        if (!od_pv_is_small_int(v))
            return 0;
        e.stream = (uint64_t)od_pv_small_int(v);
    }
    if (pos[F_TIME_US] >= 0) {
        v = kv[2 * pos[F_TIME_US] + 1];
        if (!od_pv_is_small_int(v) || od_pv_small_int(v) < 0)
            return 0;
        e.time_us = (uint64_t)od_pv_small_int(v);
    }
    if (pos[F_FRAMES] >= 0 && !L->streamed) {
        uint32_t slot = od_pv_cont_index_fast(kv[2 * pos[F_FRAMES] + 1]);
        if (slot >= L->stack_cache_cap || !L->stack_cache[slot])
            return 0;
        e.stack = L->stack_cache[slot] - 1;
    }
    return take_entry(L, t, &e, record, err);
}

static int absorb(void *ud, const od_ptree *t, const od_pv *kv, size_t npairs, uint32_t *record,
                  od_error *err)
{
    loader *L = ud;
    /* Trace entries, blocks and segments have a dozen keys at most: wider dicts are kept. */
    if (npairs > 32)
        return 0;
    const uint8_t *fields = L->last_fields;
    uint32_t has = 0;
    /* Consecutive dicts usually have the same keys in the same order: reuse the mapping. */
    od_pv diff = npairs != L->last_npairs;
    for (size_t i = 0; i < npairs; i++)
        diff |= kv[2 * i] ^ L->last_keys[i];
    if (diff == 0) {
        has = L->last_has;
    } else {
        memset(L->last_pos, -1, sizeof L->last_pos);
        for (size_t i = 0; i < npairs; i++) {
            int f = field_of(L, t, kv[2 * i]);
            L->last_fields[i] = (uint8_t)f;
            if (f != F_NONE) {
                has |= 1u << f;
                L->last_pos[f] = L->last_pos[f] == -1 ? (int8_t)i : -2;
            }
            L->last_keys[i] = kv[2 * i];
        }
        static const uint8_t trace_fields[] = {F_ACTION, F_ADDR, F_SIZE, F_STREAM, F_TIME_US,
                                               F_FRAMES, F_DEVICE_FREE};
        L->last_trace_fast = L->last_pos[F_ACTION] >= 0;
        for (size_t i = 0; i < sizeof trace_fields; i++)
            if (L->last_pos[trace_fields[i]] == -2)
                L->last_trace_fast = 0;
        L->last_has = has;
        L->last_npairs = npairs;
    }
    if (has & (1u << F_ACTION)) {
        int r = L->last_trace_fast ? absorb_trace_fast(L, t, kv, record, err) : 0;
        return r ? r : absorb_trace(L, t, kv, fields, npairs, record, err);
    }
    if (L->pass) { /* a pass meets only trace entries and the dicts inside them */
        if ((has & (1u << F_BLOCKS)) || (has & (1u << F_STATE)))
            return od_fail(err, OD_ERR_IO, "the file changed while it was read: a block where the trace was"), -1;
        return 0;
    }
    if ((has & (1u << F_BLOCKS)) && (has & (1u << F_TOTAL_SIZE)))
        return absorb_segment(L, t, kv, fields, npairs, record, err);
    if ((has & (1u << F_STATE)) && (has & (1u << F_SIZE)))
        return absorb_block(L, t, kv, fields, npairs, record, err);
    return 0;
}

/* What every consumer relies on, established by the loader and stated once here:
 * traces[i].device == i, segments by (device, address) and their blocks by address inside
 * them, and every stack index (segments, blocks, trace entries) in range. */
static void assert_invariants(const od_snapshot *s)
{
    for (size_t i = 0; i < s->n_traces; i++) {
        assert(s->traces[i].device == (int64_t)i);
        for (size_t k = 0; k < s->traces[i].n_entries; k++)
            assert(od_trace_at(&s->traces[i], k).stack < s->n_stacks || s->n_stacks == 0);
    }
    for (size_t i = 0; i < s->n_segments; i++) {
        const od_segment *g = &s->segments[i];
        assert(i == 0 || s->segments[i - 1].device < g->device ||
               (s->segments[i - 1].device == g->device && s->segments[i - 1].address <= g->address));
        assert(g->first_block + g->n_blocks <= s->n_blocks);
        assert(g->stack < s->n_stacks || s->n_stacks == 0);
        for (size_t k = 1; k < g->n_blocks; k++)
            assert(s->blocks[g->first_block + k - 1].address <= s->blocks[g->first_block + k].address);
    }
    for (size_t i = 0; i < s->n_blocks; i++)
        assert(s->blocks[i].stack < s->n_stacks || s->n_stacks == 0);
    (void)s;
}

/* ---------- after the parse: the document's top level ---------- */

static od_status doc_error(od_error *err, const char *fmt, const char *a, const char *b)
{
    return od_fail_at(err, OD_ERR_FORMAT, 0, fmt, a, b);
}

static int cmp_seg(const void *pa, const void *pb)
{
    const od_segment *a = pa, *b = pb;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return a->address < b->address ? -1 : a->address > b->address;
}

static int cmp_block(const void *pa, const void *pb)
{
    const od_block *a = pa, *b = pb;
    return a->address < b->address ? -1 : a->address > b->address;
}

static od_status take_segments(loader *L, const od_ptree *t, od_pv list, od_error *err)
{
    od_snapshot *s = L->snap;
    if (od_pv_typeof(t, list) != OD_PV_LIST)
        return doc_error(err, "not a memory snapshot: 'segments' must be a list, found %s%s",
                         od_pv_type_name(od_pv_typeof(t, list)), "");
    size_t n = od_pv_len(t, list);
    s->segments = calloc(n ? n : 1, sizeof *s->segments);
    size_t nb = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t r = od_pv_record(t, od_pv_item(t, list, i));
        if (r == UINT32_MAX || REC_KIND(r) != REC_SEGMENT)
            return doc_error(err, "not a memory snapshot: segments[] must be segment dicts with "
                                  "'total_size' and 'blocks', found %s%s",
                             od_pv_type_name(od_pv_typeof(t, od_pv_item(t, list, i))), "");
        nb += L->segs[REC_INDEX(r)].n_blocks;
    }
    s->blocks = calloc(nb ? nb : 1, sizeof *s->blocks);
    if (!s->segments || !s->blocks)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        od_segment seg = L->segs[REC_INDEX(od_pv_record(t, od_pv_item(t, list, i)))];
        size_t first = s->n_blocks;
        for (size_t k = 0; k < seg.n_blocks; k++)
            s->blocks[s->n_blocks++] = L->blocks[L->seg_blocks[seg.first_block + k]];
        seg.first_block = first;
        od_sort(s->blocks + first, seg.n_blocks, sizeof *s->blocks, cmp_block);
        s->segments[s->n_segments++] = seg;
    }
    /* Sort segments by (device, address), carrying their block ranges along. */
    od_sort(s->segments, s->n_segments, sizeof *s->segments, cmp_seg);
    od_block *sorted = malloc((nb ? nb : 1) * sizeof *sorted);
    if (!sorted)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < s->n_segments; i++) {
        memcpy(sorted + k, s->blocks + s->segments[i].first_block, s->segments[i].n_blocks * sizeof *sorted);
        s->segments[i].first_block = k;
        k += s->segments[i].n_blocks;
    }
    free(s->blocks);
    s->blocks = sorted;
    return OD_OK;
}

static od_status take_traces(loader *L, const od_ptree *t, od_pv list, od_error *err)
{
    od_snapshot *s = L->snap;
    if (od_pv_typeof(t, list) != OD_PV_LIST)
        return doc_error(err, "not a memory snapshot: 'device_traces' must be a list, found %s%s",
                         od_pv_type_name(od_pv_typeof(t, list)), "");
    size_t n = od_pv_len(t, list);
    if (n > 1024)
        return doc_error(err, "'device_traces' lists more devices than any machine has%s%s", "", "");
    s->traces = calloc(n ? n : 1, sizeof *s->traces);
    if (!s->traces)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    s->has_traces = 1;
    s->n_traces = n;
    /* Entries were absorbed in document order, so each device's trace is normally one
     * contiguous run of L->entries and is handed over without copying. */
    int contiguous = 1;
    size_t expect = 0;
    for (size_t d = 0; d < n; d++) {
        od_pv tr = od_pv_item(t, list, d);
        if (od_pv_typeof(t, tr) != OD_PV_LIST)
            return doc_error(err, "not a memory snapshot: device_traces[] must be lists, found %s%s",
                             od_pv_type_name(od_pv_typeof(t, tr)), "");
        size_t m;
        uint32_t first;
        if (od_pv_record_run(t, tr, &first, &m)) { /* the usual case: no items to look at */
            if (REC_KIND(first) != REC_TRACE)
                return doc_error(err, "not a memory snapshot: trace entries must be dicts with an "
                                      "'action', found %s%s",
                                 od_pv_type_name(od_pv_typeof(t, od_pv_item(t, tr, 0))), "");
            if (REC_INDEX(first) != expect)
                contiguous = 0;
            expect = REC_INDEX(first) + m;
            continue;
        }
        const od_pv *items = od_pv_items(t, tr, &m);
        for (size_t i = 0; i < m; i++) {
            uint32_t r = od_pv_record_fast(items[i]);
            if (r == UINT32_MAX)
                r = od_pv_record(t, items[i]);
            if (r == UINT32_MAX || REC_KIND(r) != REC_TRACE)
                return doc_error(err, "not a memory snapshot: trace entries must be dicts with an "
                                      "'action', found %s%s",
                                 od_pv_type_name(od_pv_typeof(t, od_pv_item(t, tr, i))), "");
            if (REC_INDEX(r) != expect++)
                contiguous = 0;
        }
    }
    /* Otherwise the traces are copied, in order, into a store of their own; a stream is
     * read only in order. */
    if (!contiguous && L->streamed)
        return od_fail(err, OD_ERR_LIMIT, "the device traces are laid out out of order (pickle.dump never "
                                          "does this), which a streaming read cannot follow: read the snapshot whole");
    if (!contiguous) {
        od_device_trace all;
        od_trace_store_view(L->entries, 0, L->n_entries, 0, &all);
        if (!(L->st->copied = od_trace_store_new()))
            return od_fail(err, OD_ERR_NOMEM, "out of memory");
        for (size_t d = 0; d < n; d++) {
            od_pv tr = od_pv_item(t, list, d);
            for (size_t i = 0, m = od_pv_len(t, tr); i < m; i++) {
                od_trace_entry e = od_trace_at(&all, REC_INDEX(od_pv_record(t, od_pv_item(t, tr, i))));
                if (!od_trace_store_add(L->st->copied, &e))
                    return od_fail(err, OD_ERR_NOMEM, "out of memory");
            }
        }
    }
    /* Read again from the file: each device's trace is one list whose start was seen. */
    if (L->reread && n && !(L->st->device_start = calloc(n, sizeof *L->st->device_start)))
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    for (size_t d = 0, at = 0, k = 0; L->reread && d < n; d++) {
        size_t m = od_pv_len(t, od_pv_item(t, list, d));
        if (!m)
            continue;
        while (k < L->n_starts && L->starts[k].first < at)
            k++;
        if (k == L->n_starts || L->starts[k].first != at || L->starts[k].n != m)
            return od_fail(err, OD_ERR_LIMIT, "device %zu's trace list starts where a streaming read cannot find it "
                                              "again: read the snapshot whole", d);
        L->st->device_start[d] = &L->starts[k];
        at += m;
    }
    /* Views last: adding to a store moves its arrays. */
    size_t at = 0;
    for (size_t d = 0; d < n; d++) {
        size_t m = od_pv_len(t, od_pv_item(t, list, d));
        od_trace_store_view(contiguous ? L->entries : L->st->copied, at, m, (int64_t)d, &s->traces[d]);
        if (L->streamed) { /* a view that says how many, and nothing to read at random */
            memset(&s->traces[d], 0, sizeof s->traces[d]);
            s->traces[d].device = (int64_t)d;
            s->traces[d].n_entries = m;
            s->traces[d].first = at;
        }
        at += m;
    }
    return OD_OK;
}

static od_status take_settings(loader *L, const od_ptree *t, od_pv d, od_error *err)
{
    od_allocator_settings *a = &L->snap->settings;
    if (od_pv_typeof(t, d) != OD_PV_DICT)
        return OD_OK;
    a->present = 1;
    od_pv v = od_pv_dict_gets(t, d, "PYTORCH_CUDA_ALLOC_CONF");
    const char *conf = copy_str(L, t, v);
    a->alloc_conf = conf ? conf : "";
    v = od_pv_dict_gets(t, d, "max_split_size");
    if (!od_pv_get_i64(t, v, &a->max_split_size))
        a->max_split_size = -1;
    /* torch reports "unlimited" as SIZE_MAX. */
    uint64_t u;
    if (od_pv_get_u64(t, v, &u) && u >= MAX_SANE_BYTES)
        a->max_split_size = -1;
    /* torch accepts only 0 < threshold < 1 (and 0, off): any other value is no setting. */
    if (!od_pv_get_f64(t, od_pv_dict_gets(t, d, "garbage_collection_threshold"),
                       &a->garbage_collection_threshold) ||
        !(a->garbage_collection_threshold > 0 && a->garbage_collection_threshold < 1))
        a->garbage_collection_threshold = 0;
    if (!od_pv_get_bool(t, od_pv_dict_gets(t, d, "expandable_segments"), &a->expandable_segments))
        a->expandable_segments = 0;
    v = od_pv_dict_gets(t, d, "roundup_power2_divisions");
    for (size_t i = 0; i < od_pv_len(t, v) && i < 16; i++) {
        int64_t div;
        if (od_pv_get_i64(t, od_pv_item(t, v, i), &div) && div >= 0 && div <= 1 << 20)
            a->roundup_power2_divisions[i] = (uint32_t)div;
    }
    /* torch 2.x writes a dict {"1": d, "2": d, ..., "32768": d} keyed by the interval
     * start in MiB: the key's log2 is the table index. */
    if (od_pv_typeof(t, v) == OD_PV_DICT) {
        for (size_t i = 0; i < od_pv_len(t, v); i++) {
            size_t klen = 0;
            const char *k = od_pv_str(t, od_pv_dict_key(t, v, i), &klen);
            int64_t div;
            if (!k || klen == 0 || klen > 6 ||
                !od_pv_get_i64(t, od_pv_dict_value(t, v, i), &div) || div < 0 || div > 1 << 20)
                continue;
            uint64_t mb = 0;
            size_t j = 0;
            while (j < klen && k[j] >= '0' && k[j] <= '9')
                mb = mb * 10 + (uint64_t)(k[j++] - '0');
            if (j != klen || mb == 0 || (mb & (mb - 1)))
                continue;
            unsigned idx = 0;
            while ((1ull << idx) < mb)
                idx++;
            if (idx < 16)
                a->roundup_power2_divisions[idx] = (uint32_t)div;
        }
    }
    (void)err;
    return OD_OK;
}

static od_status take_annotations(loader *L, const od_ptree *t, od_pv list, od_error *err)
{
    od_snapshot *s = L->snap;
    size_t n = od_pv_typeof(t, list) == OD_PV_LIST ? od_pv_len(t, list) : 0;
    if (!n)
        return OD_OK;
    s->annotations = calloc(n, sizeof *s->annotations);
    if (!s->annotations)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        od_pv a = od_pv_item(t, list, i);
        od_annotation an = {0, "", "", 0};
        int64_t i64;
        if (od_pv_get_i64(t, od_pv_dict_gets(t, a, "device"), &i64))
            an.device = i64;
        const char *stage = copy_str(L, t, od_pv_dict_gets(t, a, "stage"));
        const char *name = copy_str(L, t, od_pv_dict_gets(t, a, "name"));
        an.stage = stage ? stage : "";
        an.name = name ? name : "";
        if (od_pv_get_i64(t, od_pv_dict_gets(t, a, "time_us"), &i64) && i64 >= 0)
            an.time_us = (uint64_t)i64;
        s->annotations[s->n_annotations++] = an;
    }
    return OD_OK;
}

static void loader_free(loader *L)
{
    for (size_t i = 0; i < L->n_starts; i++)
        free(L->starts[i].chunk_hash);
    free(L->starts);
    free(L->fields);
    free(L->action_of);
    free(L->stack_cache);
    od_u64map_free(&L->actions);
    od_u64map_free(&L->states);
    od_u64map_free(&L->stacks);
    od_u64map_free(&L->frames);
    free(L->blocks);
    free(L->segs);
    free(L->seg_blocks);
}

static od_status load(od_input *in, int streamed, od_snapshot **out, od_error *err)
{
    od_error local;
    if (!err)
        err = &local;
    *out = NULL;
    od_snapshot *s = calloc(1, sizeof *s);
    storage *st = calloc(1, sizeof *st);
    if (st) {
        st->streamed = streamed;
        st->entries = streamed ? od_trace_store_new_stream() : od_trace_store_new();
    }
    if (!s || !st || !st->entries) {
        free(s);
        if (st)
            od_trace_store_free(st->entries);
        free(st);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    s->priv = st;
    s->settings.max_split_size = -1;
    s->settings.alloc_conf = "";
    loader L = {0};
    L.snap = s;
    L.st = st;
    L.entries = st->entries;
    L.streamed = streamed;
    L.reread = streamed && od_input_can_reread(in);
    /* Stack 0 is the empty stack. */
    s->stacks = calloc(16, sizeof *s->stacks);
    L.cap_stacks = s->stacks ? 16 : 0;
    s->n_stacks = s->stacks ? 1 : 0;
    od_pickle_options opt = {.absorb_dict = absorb, .ud = &L, .forget_absorbed = streamed, .keep_memo = L.reread};
    od_ptree *t = NULL;
    od_status rc = s->stacks ? od_pickle_load(in, &opt, &t, err) : od_fail(err, OD_ERR_NOMEM, "out of memory");
    if (rc == OD_OK) /* a gzip trailer that does not match means other bytes than were written */
        rc = od_input_finish(in, err);
    if (rc == OD_OK) {
        od_pv root = od_ptree_root(t);
        od_pv_type ty = od_pv_typeof(t, root);
        if (ty == OD_PV_DICT) {
            s->torch_major = 2;
            od_pv segs = od_pv_dict_gets(t, root, "segments");
            if (segs == OD_PV_MISSING_VALUE)
                rc = doc_error(err, "not a memory snapshot: the top-level dict has no 'segments'%s%s", "", "");
            else
                rc = take_segments(&L, t, segs, err);
            od_pv traces = od_pv_dict_gets(t, root, "device_traces");
            if (rc == OD_OK && traces != OD_PV_MISSING_VALUE)
                rc = take_traces(&L, t, traces, err);
            if (rc == OD_OK)
                rc = take_settings(&L, t, od_pv_dict_gets(t, root, "allocator_settings"), err);
            if (rc == OD_OK)
                rc = take_annotations(&L, t, od_pv_dict_gets(t, root, "external_annotations"), err);
        } else if (ty == OD_PV_LIST) {
            s->torch_major = 1;
            rc = take_segments(&L, t, root, err);
        } else {
            rc = doc_error(err, "not a memory snapshot: the pickle holds %s, expected a dict with "
                                "'segments' (torch 2.x) or a list of segments (torch 1.13)%s",
                           od_pv_type_name(ty), "");
        }
    }
    if (rc == OD_OK && L.reread) {
        /* The passes read the file again into this tree, with the hook's caches. */
        free(L.blocks);
        free(L.segs);
        free(L.seg_blocks);
        L.blocks = NULL;
        L.segs = NULL;
        L.seg_blocks = NULL;
        st->L = malloc(sizeof *st->L);
        if (st->L) {
            *st->L = L;
            st->tree = t;
            st->in = in;
            t = NULL;
        } else {
            rc = od_fail(err, OD_ERR_NOMEM, "out of memory");
        }
    }
    od_ptree_free(t);
    if (!st->L)
        loader_free(&L);
    if (rc != OD_OK) {
        od_snapshot_free(s);
        return rc;
    }
    if (!streamed)
        assert_invariants(s);
    *out = s;
    return OD_OK;
}

od_status od_snapshot_load(od_input *in, od_snapshot **out, od_error *err)
{
    return load(in, 0, out, err);
}

od_status od_snapshot_load_streamed(od_input *in, od_snapshot **out, od_error *err)
{
    return load(in, 1, out, err);
}

int od_snapshot_is_streamed(const od_snapshot *snap)
{
    const storage *st = snap->priv;
    return st && st->streamed;
}

/* ---------- passes ---------- */

struct od_trace_pass {
    const od_device_trace *t;   /* held: read with od_trace_at */
    size_t i, n;                /* entries read, entries in all */
    od_trace_stream *stream;    /* streamed from a compact stream */
    size_t skip;                /* stream entries before this device's */
    /* streamed by reading the file again: */
    storage *st;
    const list_start *ls;
    od_input *in;
    od_pickle_options opt;
    od_pickle_reader *reader;
    od_trace_entry *buf;        /* where the hook puts entries during a read */
    size_t max, got;
    uint64_t hash;
    od_status status;
    od_error err;
};

static od_status open_reread(od_trace_pass *p, storage *st, const list_start *ls, od_error *err)
{
    if (st->passes_open)
        return od_fail(err, OD_ERR_ARG, "a pass over this streamed snapshot is already open");
    p->st = st;
    p->ls = ls;
    p->opt = (od_pickle_options){.absorb_dict = absorb, .ud = st->L, .forget_absorbed = 1};
    od_status rc = od_input_open_at(st->in, ls->pos.offset, &p->in, err);
    if (rc == OD_OK)
        rc = od_pickle_reread(p->in, st->tree, &ls->pos, &p->opt, &p->reader, err);
    if (rc != OD_OK)
        return rc;
    st->passes_open++;
    return OD_OK;
}

od_status od_trace_pass_open(const od_snapshot *snap, int64_t device, od_trace_pass **out, od_error *err)
{
    *out = NULL;
    od_trace_pass *p = calloc(1, sizeof *p);
    if (!p)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    const od_device_trace *t = NULL;
    size_t d = 0;
    for (size_t i = 0; i < snap->n_traces; i++)
        if (snap->traces[i].device == device) {
            t = &snap->traces[i];
            d = i;
        }
    p->n = t ? t->n_entries : 0;
    storage *st = snap->priv;
    od_status rc = OD_OK;
    if (p->n && st && st->tree) {
        rc = open_reread(p, st, st->device_start[d], err);
    } else if (p->n && st && st->streamed) {
        p->stream = od_trace_stream_open(st->entries);
        p->skip = t->first;
        if (!p->stream)
            rc = od_fail(err, OD_ERR_NOMEM, "out of memory");
    } else {
        p->t = t;
    }
    if (rc != OD_OK) {
        od_trace_pass_close(p);
        return rc;
    }
    *out = p;
    return OD_OK;
}

/* The hook, in a pass that reads the file again: the entry must be the one the load read
 * there (the hashes tell); each read pauses when its buffer is full or the trace ends. */
static int pass_take(loader *L, const od_trace_entry *e, uint32_t *record, od_error *err)
{
    od_trace_pass *p = L->pass;
    if (p->i >= p->n) {
        od_fail(err, OD_ERR_IO, "the file changed while it was read: more trace entries than at first");
        return -1;
    }
    p->buf[p->got++] = *e;
    *record = REC(REC_TRACE, p->ls->first + p->i);
    p->hash = entry_hash(p->hash, e);
    p->i++;
    if ((p->i % CHECK_CHUNK == 0 && p->hash != p->ls->chunk_hash[p->i / CHECK_CHUNK - 1]) ||
        (p->i == p->n && p->hash != p->ls->hash)) {
        od_fail(err, OD_ERR_IO, "the file changed while it was read: its trace entries differ from the first reading");
        return -1;
    }
    return OD_ABSORB | OD_ABSORB_FORGETTABLE | (p->got == p->max || p->i == p->n ? OD_ABSORB_PAUSE : 0);
}

size_t od_trace_pass_read(od_trace_pass *p, od_trace_entry *buf, size_t max)
{
    size_t k = 0;
    if (p->status != OD_OK || max == 0)
        return 0;
    if (p->reader) {
        if (p->i >= p->n)
            return 0;
        loader *L = p->st->L;
        L->pass = p;
        p->buf = buf;
        p->max = max;
        p->got = 0;
        p->status = od_pickle_reader_step(p->reader, &p->err);
        L->pass = NULL;
        if (p->status != OD_OK && p->status != OD_ERR_NOMEM && p->status != OD_ERR_IO) {
            /* the bytes the load read without fault fail now: they are not the same */
            char msg[sizeof p->err.msg];
            snprintf(msg, sizeof msg, "%s", p->err.msg);
            p->status = od_fail_at(&p->err, OD_ERR_IO, p->err.offset, "the file changed while it was read (%s)", msg);
        }
        return p->status == OD_OK ? p->got : 0;
    }
    if (p->stream) {
        for (; p->skip; p->skip--)
            od_trace_stream_next(p->stream, &buf[0]);
        while (k < max && p->i < p->n && od_trace_stream_next(p->stream, &buf[k])) {
            k++;
            p->i++;
        }
        return k;
    }
    for (; k < max && p->i < p->n; k++)
        buf[k] = od_trace_at(p->t, p->i++);
    return k;
}

od_status od_trace_pass_status(const od_trace_pass *p, od_error *err)
{
    if (p->status != OD_OK && err)
        *err = p->err;
    return p->status;
}

void od_trace_pass_close(od_trace_pass *p)
{
    if (!p)
        return;
    if (p->reader || p->in)
        p->st->passes_open -= p->reader != NULL;
    od_pickle_reader_free(p->reader);
    od_input_close(p->in);
    od_trace_stream_close(p->stream);
    free(p);
}

void od_snapshot_free(od_snapshot *s)
{
    if (!s)
        return;
    storage *st = s->priv;
    if (st) {
        for (strchunk *c = st->strings, *n; c; c = n) {
            n = c->next;
            free(c);
        }
        od_u64map_free(&st->str_copies);
        free(st->copies);
        od_trace_store_free(st->entries);
        od_trace_store_free(st->copied);
        if (st->L) {
            loader_free(st->L);
            free(st->L);
        }
        od_ptree_free(st->tree);
        free(st->device_start);
        free(st);
    }
    free(s->traces);
    free(s->segments);
    free(s->blocks);
    free(s->frames);
    free(s->stack_frames);
    free(s->stacks);
    free(s->annotations);
    free(s);
}

const uint32_t *od_snapshot_stack(const od_snapshot *snap, uint32_t stack, uint32_t *count)
{
    if (stack >= snap->n_stacks || stack == 0) {
        *count = 0;
        return NULL;
    }
    *count = snap->stacks[stack].count;
    return snap->stack_frames + snap->stacks[stack].first;
}

const char *od_action_name(od_action a)
{
    return (unsigned)a < sizeof action_names / sizeof action_names[0] ? action_names[a] : "other";
}

