/* pickle.c - a pickle virtual machine for plain data that never executes anything.
 *
 * Values are 64-bit words tagged in their low 3 bits: small ints inline, strings and
 * containers by index. Container items live in a chunked arena (most containers are
 * filled by a single APPENDS/SETITEMS and never grow); lists that keep growing move to a
 * buffer of their own. Completed lists and tuples (of up to 4096 items) are hash-consed,
 * so the hundreds of thousands of identical stack-frame lists of a snapshot are stored
 * once. */
#include "read/pickle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/u64map.h"

enum { TAG_INT = 0, TAG_STR = 1, TAG_CONT = 2, TAG_BOX = 3, TAG_BYTES = 4, TAG_CONST = 5,
       TAG_MARK = 6, TAG_RECORD = 7 };
enum { C_NONE = 0, C_FALSE = 1, C_TRUE = 2, C_MISSING = 3, C_UNSET = 4, C_GONE = 5 };
enum { K_LIST, K_TUPLE, K_DICT, K_SET, K_RECORD, K_ALIAS, K_FREE };
enum { F_OWN = 1, F_FROZEN = 2, F_SHAPED = 4, F_CONSED = 8, F_RUN = 16 };
enum { B_I64, B_U64, B_F64, B_BIG };

#define MKV(tag, payload) ((((od_pv)(payload)) << 3) | (tag))
#define TAG(v) ((unsigned)((v) & 7))
#define PAYLOAD(v) ((v) >> 3)
#define V_NONE MKV(TAG_CONST, C_NONE)
#define V_UNSET MKV(TAG_CONST, C_UNSET)
#define V_GONE MKV(TAG_CONST, C_GONE) /* a memo slot let go (od_pickle_options.forget_absorbed) */
#define V_MARK MKV(TAG_MARK, 0)
#define V_FAIL MKV(TAG_MARK, 1) /* allocation failed; never a value */
#define SMALL_MIN (-((int64_t)1 << 60))
#define SMALL_MAX (((int64_t)1 << 60) - 1)
#define ARENA_CHUNK (1u << 17)        /* values per arena chunk (1 MiB) */
#define BUF_SIZE (1u << 16)          /* input window; longer strings go through tmp */
/* The most values, and MARKs, the stack holds: pickle.dump batches list and dict items by
 * the thousand, so a snapshot needs a few thousand; a file of nothing but MARKs or empty
 * lists (2e8 of them gzip to 194 KB) held 1.6-3.5 GB before this limit. */
#define MAX_STACK ((size_t)1 << 22)
/* Containers inside containers: a torch snapshot nests seven deep (dict, list of segments,
 * segment, list of blocks, block, frames list, frame). Without a bound, TUPLE1 repeated
 * fifty million times (50 MB) builds as many distinct tuples, 1.9 GB and a minute. */
#define MAX_DEPTH 1000u
#define MAX_SHAPES 65535u
#define MAX_SHAPE_KEYS 64u
#define CONS_MAX_ITEMS 4096u        /* longer lists and tuples are not shared */
#define MEMO_GAP (1u << 20)           /* how far past the memo's end BINPUT may write */

typedef struct {
    od_pv *items;
    uint32_t count;  /* items (dict: pairs); K_RECORD: record; K_ALIAS: target */
    uint16_t shape;  /* dict with F_SHAPED: keys from shapes[shape] */
    uint8_t kind;
    uint8_t flags;
} cont;

typedef struct {
    const char *text;
    uint32_t len;
    uint32_t hash;
    uint8_t is_bytes;
} strent;

typedef struct {
    uint8_t kind;
    union { int64_t i; uint64_t u; double f; } as;
} box;

typedef struct {
    od_pv *keys;
    uint32_t n;
    uint32_t hash;
} shape;

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    od_pv data[];
} chunk;

typedef struct cchunk {
    struct cchunk *next;
    size_t used, cap;
    char data[];
} cchunk;

struct od_ptree {
    od_pv root;
    uint64_t input_bytes;
    cont *conts;
    size_t n_conts, cap_conts;
    strent *strs;
    size_t n_strs, cap_strs;
    uint32_t *str_index;   /* open addressing: string id + 1, 0 = empty */
    size_t str_index_cap;
    box *boxes;
    size_t n_boxes, cap_boxes;
    shape *shapes;         /* shapes[0] unused */
    size_t n_shapes, cap_shapes;
    uint32_t *shape_index;
    size_t shape_index_cap;
    uint32_t free_conts;   /* recycled container slots: id + 1, chained through count */
    uint32_t *cons_index;  /* container id + 1 */
    size_t cons_index_cap, n_consed;
    chunk *arena;
    cchunk *chars;
    od_u64map run_first;   /* F_RUN list id -> its first record */
    /* where the dict offered to the absorb hook began (od_ptree_offer_position) */
    int offer_known, offer_marked;
    uint64_t offer_offset, offer_memo;
    od_pv offer_below;
    struct kept_memo *kept; /* od_pickle_options.keep_memo */
};

/* The memo as a parse left it, for reading parts of the pickle again (od_pickle_reread):
 * the dense slots, the wide and sparse ones, and each container's depth. */
typedef struct kept_memo {
    uint32_t *dense;
    size_t n_dense;        /* slots from here on are sparse */
    int forgetting;
    od_u64map wide_index;  /* memo index -> index into wide */
    od_pv *wide;
    size_t n_wide;
    uint16_t *depth;
    size_t n_depth;
} kept_memo;

/* ---------- storage ---------- */

static od_pv *arena_alloc(od_ptree *t, size_t n)
{
    chunk *c = t->arena;
    if (!c || c->cap - c->used < n) {
        /* Chunks grow geometrically so small pickles stay small. */
        size_t want = c ? (c->cap * 2 < ARENA_CHUNK ? c->cap * 2 : ARENA_CHUNK) : 512;
        size_t cap = n > want ? n : want;
        if (cap > (SIZE_MAX - sizeof(chunk)) / sizeof(od_pv))
            return NULL;
        chunk *nc = malloc(sizeof(chunk) + cap * sizeof(od_pv));
        if (!nc)
            return NULL;
        nc->used = 0;
        nc->cap = cap;
        /* A one-off big chunk goes behind the current one so the current stays the tail. */
        if (c && n > want && c->cap - c->used > 64) {
            nc->next = c->next;
            c->next = nc;
            nc->used = n;
            return nc->data;
        }
        nc->next = c;
        t->arena = c = nc;
    }
    od_pv *p = c->data + c->used;
    c->used += n;
    return p;
}

static int arena_is_top(const od_ptree *t, const od_pv *p, size_t n)
{
    const chunk *c = t->arena;
    return c && p + n == c->data + c->used;
}

static void arena_pop(od_ptree *t, const od_pv *p, size_t n)
{
    if (arena_is_top(t, p, n))
        t->arena->used -= n;
}

static char *chars_alloc(od_ptree *t, size_t n)
{
    cchunk *c = t->chars;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > (1u << 16) ? n : (1u << 16);
        cchunk *nc = malloc(sizeof(cchunk) + cap);
        if (!nc)
            return NULL;
        nc->used = 0;
        nc->cap = cap;
        if (c && n > (1u << 16)) {
            nc->next = c->next;
            c->next = nc;
            nc->used = n;
            return nc->data;
        }
        nc->next = c;
        t->chars = c = nc;
    }
    char *p = c->data + c->used;
    c->used += n;
    return p;
}

static uint32_t hash_bytes(const void *data, size_t len, uint32_t seed)
{
    /* FNV-1a over 64-bit words where possible: strings here are short. */
    const unsigned char *s = data;
    uint64_t h = 1469598103934665603ull ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= s[i];
        h *= 1099511628211ull;
    }
    return (uint32_t)(h ^ (h >> 32));
}

static uint32_t hash_words(const od_pv *w, size_t n, uint32_t seed)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ seed ^ n;
    for (size_t i = 0; i < n; i++) {
        h ^= w[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    return (uint32_t)(h ^ (h >> 32));
}

/* Index helper: open addressing over uint32 slots holding id + 1. */
static int index_rehash(uint32_t **slots, size_t *cap, size_t live, uint32_t (*hash_of)(const od_ptree *, uint32_t),
                        const od_ptree *t)
{
    if ((live + 1) * 2 <= *cap)
        return 1;
    size_t nc = *cap ? *cap * 2 : 1024;
    uint32_t *ns = calloc(nc, sizeof *ns);
    if (!ns)
        return 0;
    for (size_t i = 0; i < *cap; i++) {
        uint32_t id = (*slots)[i];
        if (!id)
            continue;
        size_t j = hash_of(t, id - 1) & (nc - 1);
        while (ns[j])
            j = (j + 1) & (nc - 1);
        ns[j] = id;
    }
    free(*slots);
    *slots = ns;
    *cap = nc;
    return 1;
}

static uint32_t str_hash_of(const od_ptree *t, uint32_t id)
{
    return t->strs[id].hash;
}

static uint32_t shape_hash_of(const od_ptree *t, uint32_t id)
{
    return t->shapes[id].hash;
}

static uint32_t cont_hash(const cont *c)
{
    return hash_words(c->items, c->count, c->kind);
}

static uint32_t cons_hash_of(const od_ptree *t, uint32_t id)
{
    return cont_hash(&t->conts[id]);
}

/* Intern a string; returns its value or V_FAIL on allocation failure. */
static od_pv intern(od_ptree *t, const char *s, size_t len, int is_bytes)
{
    uint32_t h = hash_bytes(s, len, (uint32_t)is_bytes);
    if (t->str_index_cap) {
        size_t mask = t->str_index_cap - 1;
        for (size_t j = h & mask; t->str_index[j]; j = (j + 1) & mask) {
            const strent *e = &t->strs[t->str_index[j] - 1];
            if (e->hash == h && e->len == len && e->is_bytes == is_bytes && memcmp(e->text, s, len) == 0)
                return MKV(is_bytes ? TAG_BYTES : TAG_STR, t->str_index[j] - 1);
        }
    }
    if (t->n_strs >= UINT32_MAX - 1)
        return V_FAIL;
    if (!index_rehash(&t->str_index, &t->str_index_cap, t->n_strs, str_hash_of, t))
        return V_FAIL;
    if (!od_grow((void **)&t->strs, &t->cap_strs, t->n_strs + 1, sizeof *t->strs))
        return V_FAIL;
    char *copy = chars_alloc(t, len + 1);
    if (!copy)
        return V_FAIL;
    memcpy(copy, s, len);
    copy[len] = '\0';
    uint32_t id = (uint32_t)t->n_strs++;
    t->strs[id] = (strent){copy, (uint32_t)len, h, (uint8_t)is_bytes};
    size_t mask = t->str_index_cap - 1;
    size_t j = h & mask;
    while (t->str_index[j])
        j = (j + 1) & mask;
    t->str_index[j] = id + 1;
    return MKV(is_bytes ? TAG_BYTES : TAG_STR, id);
}

static od_pv new_box(od_ptree *t, box b)
{
    if (!od_grow((void **)&t->boxes, &t->cap_boxes, t->n_boxes + 1, sizeof *t->boxes))
        return V_FAIL;
    t->boxes[t->n_boxes] = b;
    return MKV(TAG_BOX, t->n_boxes++);
}

static od_pv make_int(od_ptree *t, int64_t v)
{
    if (v >= SMALL_MIN && v <= SMALL_MAX)
        return MKV(TAG_INT, (uint64_t)v & (((uint64_t)1 << 61) - 1));
    return new_box(t, (box){.kind = B_I64, .as.i = v});
}

static int64_t small_int(od_pv v)
{
    /* Sign-extend the 61-bit payload. */
    return ((int64_t)v) >> 3;
}

static od_pv new_cont(od_ptree *t, int kind)
{
    if (t->free_conts) {
        uint32_t id = t->free_conts - 1;
        t->free_conts = t->conts[id].count;
        t->conts[id] = (cont){NULL, 0, 0, (uint8_t)kind, 0};
        return MKV(TAG_CONT, id);
    }
    if (t->n_conts >= UINT32_MAX - 1)
        return V_FAIL;
    if (!od_grow((void **)&t->conts, &t->cap_conts, t->n_conts + 1, sizeof *t->conts))
        return V_FAIL;
    t->conts[t->n_conts] = (cont){NULL, 0, 0, (uint8_t)kind, 0};
    return MKV(TAG_CONT, t->n_conts++);
}

static uint32_t resolve(const od_ptree *t, uint32_t id)
{
    while (t->conts[id].kind == K_ALIAS)
        id = t->conts[id].count;
    return id;
}

static size_t own_cap(size_t count)
{
    size_t c = 4;
    while (c < count)
        c *= 2;
    return c;
}

/* A list of absorbed records appended in their own order - a device trace, the segments,
 * a segment's blocks - is kept as its first record and a count (F_RUN): ten million trace
 * entries cost no item array. Anything else appended to it, or a request for its items,
 * writes the items out. */
static uint32_t run_first(const od_ptree *t, const cont *c)
{
    uint32_t first = 0;
    od_u64map_get(&t->run_first, (uint64_t)(c - t->conts), &first);
    return first;
}

/* Write a run's items out (F_OWN); 0 when out of memory (c unchanged). */
static int expand_run(od_ptree *t, cont *c)
{
    uint32_t first = run_first(t, c);
    od_pv *own = malloc(own_cap(c->count) * sizeof *own); /* cont_extend's rule for owned items */
    if (!own)
        return 0;
    for (uint32_t i = 0; i < c->count; i++)
        own[i] = MKV(TAG_RECORD, first + i);
    od_u64map_del(&t->run_first, (uint64_t)(c - t->conts));
    c->items = own;
    c->flags = (uint8_t)((c->flags | F_OWN) & ~F_RUN);
    return 1;
}

/* Append n items w to list c as a run when they continue it (or start one in an empty
 * list): 1 done, 0 not a run (nothing changed), -1 out of memory. */
static int run_extend(od_ptree *t, cont *c, const od_pv *w, size_t n)
{
    if (n == 0 || c->kind != K_LIST || TAG(w[0]) != TAG_RECORD || (c->count && !(c->flags & F_RUN)))
        return 0;
    uint64_t first = PAYLOAD(w[0]);
    if (c->count && first != (uint64_t)run_first(t, c) + c->count)
        return 0;
    for (size_t i = 1; i < n; i++)
        if (w[i] != MKV(TAG_RECORD, first + i))
            return 0;
    if (!c->count) {
        if (!od_u64map_put(&t->run_first, (uint64_t)(c - t->conts), (uint32_t)first))
            return -1;
        c->flags |= F_RUN;
    }
    return 1;
}

/* Store n more items (or pairs, as 2n words for an unshaped dict) at the end of c. */
static int cont_extend(od_ptree *t, cont *c, size_t used_words, const od_pv *w, size_t n)
{
    size_t total = used_words + n;
    if (n == 0)
        return 1;
    if ((c->flags & F_RUN) && !expand_run(t, c))
        return 0;
    if (total > UINT32_MAX * (size_t)2)
        return 0;
    if (used_words == 0 && !(c->flags & F_OWN)) {
        c->items = arena_alloc(t, n);
        if (!c->items)
            return 0;
    } else if (!(c->flags & F_OWN) && arena_is_top(t, c->items, used_words) &&
               t->arena->cap - t->arena->used >= n) {
        t->arena->used += n;
    } else if (!(c->flags & F_OWN)) {
        od_pv *own = malloc(own_cap(total) * sizeof(od_pv));
        if (!own)
            return 0;
        memcpy(own, c->items, used_words * sizeof(od_pv));
        arena_pop(t, c->items, used_words);
        c->items = own;
        c->flags |= F_OWN;
    } else if (total > own_cap(used_words)) {
        od_pv *own = realloc(c->items, own_cap(total) * sizeof(od_pv));
        if (!own)
            return 0;
        c->items = own;
    }
    memcpy(c->items + used_words, w, n * sizeof(od_pv));
    return 1;
}

static size_t dict_words(const cont *c)
{
    return (c->flags & F_SHAPED) ? c->count : (size_t)c->count * 2;
}

/* Make a shaped dict an ordinary key/value one (it is receiving more items). */
static int unshape(od_ptree *t, cont *c)
{
    if (!(c->flags & F_SHAPED))
        return 1;
    const shape *s = &t->shapes[c->shape];
    od_pv *own = malloc(own_cap((size_t)c->count * 2) * sizeof(od_pv));
    if (!own)
        return 0;
    for (uint32_t i = 0; i < c->count; i++) {
        own[2 * i] = s->keys[i];
        own[2 * i + 1] = c->items[i];
    }
    if (c->flags & F_OWN)
        free(c->items);
    else
        arena_pop(t, c->items, c->count);
    c->items = own;
    c->flags = (uint8_t)((c->flags | F_OWN) & ~F_SHAPED);
    return 1;
}

static int find_shape(od_ptree *t, const od_pv *kv, size_t npairs, uint16_t *out)
{
    if (npairs == 0 || npairs > MAX_SHAPE_KEYS)
        return 0;
    od_pv keys[MAX_SHAPE_KEYS];
    for (size_t i = 0; i < npairs; i++) {
        if (TAG(kv[2 * i]) != TAG_STR)
            return 0;
        keys[i] = kv[2 * i];
    }
    uint32_t h = hash_words(keys, npairs, 7);
    if (t->shape_index_cap) {
        size_t mask = t->shape_index_cap - 1;
        for (size_t j = h & mask; t->shape_index[j]; j = (j + 1) & mask) {
            const shape *s = &t->shapes[t->shape_index[j] - 1];
            if (s->hash == h && s->n == npairs && memcmp(s->keys, keys, npairs * sizeof(od_pv)) == 0) {
                *out = (uint16_t)(t->shape_index[j] - 1);
                return 1;
            }
        }
    }
    if (t->n_shapes == 0)
        t->n_shapes = 1; /* shape 0 is never used */
    if (t->n_shapes >= MAX_SHAPES)
        return 0;
    if (!index_rehash(&t->shape_index, &t->shape_index_cap, t->n_shapes, shape_hash_of, t) ||
        !od_grow((void **)&t->shapes, &t->cap_shapes, t->n_shapes + 1, sizeof *t->shapes))
        return 0;
    od_pv *k = malloc(npairs * sizeof(od_pv));
    if (!k)
        return 0;
    memcpy(k, keys, npairs * sizeof(od_pv));
    uint32_t id = (uint32_t)t->n_shapes++;
    t->shapes[id] = (shape){k, (uint32_t)npairs, h};
    size_t mask = t->shape_index_cap - 1;
    size_t j = h & mask;
    while (t->shape_index[j])
        j = (j + 1) & mask;
    t->shape_index[j] = id + 1;
    *out = (uint16_t)id;
    return 1;
}

void od_ptree_free(od_ptree *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_conts; i++)
        if (t->conts[i].flags & F_OWN)
            free(t->conts[i].items);
    for (size_t i = 1; i < t->n_shapes; i++)
        free(t->shapes[i].keys);
    for (chunk *c = t->arena, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    for (cchunk *c = t->chars, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(t->conts);
    free(t->strs);
    free(t->str_index);
    free(t->boxes);
    free(t->shapes);
    free(t->shape_index);
    free(t->cons_index);
    od_u64map_free(&t->run_first);
    if (t->kept) {
        free(t->kept->dense);
        od_u64map_free(&t->kept->wide_index);
        free(t->kept->wide);
        free(t->kept->depth);
        free(t->kept);
    }
    free(t);
}

/* ---------- the virtual machine ---------- */

typedef struct {
    uint32_t hash, len; /* len 0: empty slot */
    size_t off;         /* into raw_bytes */
    od_pv v;
} rawent;

/* A memo fetch fast_dict saw at one position of the last dicts: its opcode bytes (under
 * mask) and the value they gave. mask 0 / raw 1 never matches. */
typedef struct {
    uint64_t raw, mask;
    od_pv val;
    uint64_t len;
} fetch_tmpl;

typedef struct {
    od_ptree *t;
    od_input *in;
    const od_pickle_options *opt;
    uint64_t max_string;
    od_error *err;
    unsigned char *buf;   /* our own bytes, where the window joins two borrowed chunks */
    const unsigned char *win, *p, *end; /* the window: in buf or in a borrowed chunk */
    uint64_t base;        /* input offset of win[0] */
    const unsigned char *rest, *rest_end; /* the borrowed chunk's bytes past the window */
    size_t tail_from_rest; /* with the window in buf: its last bytes that precede rest */
    int eof;
    od_pv *stack;
    size_t sp, stack_cap;
    int too_deep;                /* the stack or the MARKs reached MAX_STACK */
    size_t *marks;
    size_t n_marks, marks_cap;
    uint32_t *memo;       /* a value in 4 bytes (see memo_at), or MEMO_WIDE */
    size_t n_memo, memo_cap; /* slots from memo_cap on (only once forgetting) are sparse */
    od_u64map memo_wide;  /* memo index -> index into wide: MEMO_WIDE and sparse slots */
    od_pv *wide;
    size_t n_wide, wide_cap;
    uint32_t *wide_free;  /* wide indices let go, for reuse */
    size_t n_wide_free, wide_free_cap;
    int forgetting;       /* opt->forget_absorbed and a dict was absorbed: slots from
                             memo_cap on live only in memo_wide, absent ones are V_GONE */
    size_t building;      /* the slot of the dict fast_dict is reading (V_UNSET until done) */
    int defer_list;       /* fast_list leaves its list's memo slot to fast_dict ... */
    size_t deferred_slot; /* ... and says which it is */
    int pause;            /* the absorb hook asked to pause (returned 2) */
    uint32_t *cont_memo;  /* per container slot: memo index + 1, 0 = none, PINNED */
    uint16_t *cont_depth; /* per container slot, once frozen: 1 + the deepest container in it */
    uint64_t *cont_off;   /* per container slot: where its EMPTY_DICT / EMPTY_LIST began */
    size_t cont_memo_cap; /* of both */
    int too_nested;       /* a container placed would nest more than MAX_DEPTH deep */
    char *tmp;            /* long strings */
    size_t tmp_cap;
    rawent *raw;          /* the raw-bytes list cache (see fast_list) */
    size_t n_raw, raw_cap;
    unsigned char *raw_bytes;
    size_t raw_used, raw_bytes_cap;
    int memo_overwritten; /* a PUT replaced a used memo slot: the cache is off */
    od_pv empty_list;     /* the shared empty list, V_FAIL until made */
    int one_by_one;       /* options: opcode_by_opcode */
    fetch_tmpl tmpl[64];  /* by position in fast_dict's pairs (2 * FAST_DICT_MAX) */
    uint64_t mask2, mask5; /* the first 2 / 5 bytes of a word loaded with memcpy */
    const unsigned char *op_p; /* the opcode being run, inside buf; NULL once shifted out */
    uint64_t op_off;      /* its offset, kept when the window moves past it */
} vm;

/* Offset of the opcode being run (computed only when an error needs it). */
static uint64_t op_offset(const vm *m)
{
    return m->op_p ? m->base + (uint64_t)(m->op_p - m->win) : m->op_off;
}

static od_status fail(vm *m, od_status st, const char *fmt, const char *detail)
{
    return od_fail_at(m->err, st, op_offset(m), fmt, detail);
}

static od_status nomem(vm *m)
{
    if (m->too_nested)
        return od_fail_at(m->err, OD_ERR_LIMIT, op_offset(m),
                          "containers nested more than %u deep (a memory snapshot nests 7)", MAX_DEPTH);
    if (m->too_deep)
        return od_fail_at(m->err, OD_ERR_LIMIT, op_offset(m),
                          "more than %u values or MARKs on the pickle's stack (pickle.dump of a snapshot "
                          "needs a few thousand)", (unsigned)MAX_STACK);
    return od_fail_at(m->err, OD_ERR_NOMEM, op_offset(m), "out of memory");
}

static od_status input_failed(vm *m)
{
    od_status st = od_input_error(m->in, m->err);
    return st;
}

/* Make at least n bytes (at most BUF_SIZE / 2) available at m->p; returns 0 if the input
 * ends first. The window is normally a chunk borrowed from the input, read in place;
 * where an opcode straddles two chunks its bytes are joined in buf, and as soon as the
 * window's remaining bytes all lie in the current chunk it steps back into it. */
static int fill(vm *m, size_t n)
{
    for (;;) {
        size_t have = (size_t)(m->end - m->p);
        if (have >= n)
            return 1;
        uint64_t at = m->base + (uint64_t)(m->p - m->win);
        if (m->op_p) {
            m->op_off = m->base + (uint64_t)(m->op_p - m->win);
            m->op_p = NULL;
        }
        if (m->win == m->buf && m->rest && have <= m->tail_from_rest) {
            /* Back into the chunk, where these bytes are followed by the rest. */
            m->win = m->p = m->rest - have;
            m->end = m->rest_end;
            m->rest = m->rest_end;
            m->base = at;
            m->tail_from_rest = 0;
            continue;
        }
        if (m->rest == m->rest_end) {
            /* The chunk is used up: keep the window's bytes, then borrow the next. */
            if (m->eof)
                return 0;
            memmove(m->buf, m->p, have);
            m->win = m->p = m->buf;
            m->end = m->buf + have;
            m->base = at;
            m->tail_from_rest = 0;
            const unsigned char *c = NULL;
            size_t k = od_input_borrow(m->in, &c);
            if (k == 0) {
                m->eof = 1;
                m->rest = m->rest_end = NULL;
                return 0;
            }
            m->rest = c;
            m->rest_end = c + k;
            if (have == 0) {
                m->win = m->p = c;
                m->end = c + k;
                m->rest = m->rest_end;
            }
            continue;
        }
        /* Join: the window's bytes, then just enough of the chunk. */
        if (m->p != m->buf) {
            memmove(m->buf, m->p, have);
            m->win = m->p = m->buf;
            m->end = m->buf + have;
            m->base = at;
        }
        size_t k = (size_t)(m->rest_end - m->rest);
        size_t want = n - have > 256 ? n - have : 256;
        if (k > want)
            k = want;
        if (k > BUF_SIZE - have)
            k = BUF_SIZE - have;
        memcpy(m->buf + have, m->rest, k);
        m->rest += k;
        m->end = m->buf + have + k;
        m->tail_from_rest = (m->tail_from_rest < have ? m->tail_from_rest : have) + k;
    }
}

static od_status truncated(vm *m, const char *what)
{
    if (input_failed(m) != OD_OK)
        return m->err->status;
    return od_fail_at(m->err, OD_ERR_FORMAT, m->base + (uint64_t)(m->end - m->win),
                      "truncated pickle: input ends inside %s", what);
}

/* Read a length-prefixed byte string of len bytes into a contiguous buffer. */
static const char *read_bytes(vm *m, uint64_t len, od_status *st)
{
    if (len > m->max_string) {
        *st = od_fail_at(m->err, OD_ERR_LIMIT, op_offset(m),
                         "string of %llu bytes is longer than the %llu-byte limit",
                         (unsigned long long)len, (unsigned long long)m->max_string);
        return NULL;
    }
    if (len <= BUF_SIZE / 2) {
        if (!fill(m, (size_t)len)) {
            *st = truncated(m, "a string");
            return NULL;
        }
        const char *s = (const char *)m->p;
        m->p += len;
        return s;
    }
    /* Long: copy in pieces, growing only as the data really arrives, so a 1 GB length
     * claimed by a 1 KB file costs nothing. */
    size_t got = 0;
    while (got < len) {
        if (m->p == m->end && !fill(m, 1)) {
            *st = truncated(m, "a string");
            return NULL;
        }
        size_t k = (size_t)(m->end - m->p);
        if (k > len - got)
            k = (size_t)(len - got);
        if (got + k > m->tmp_cap) {
            size_t nc = m->tmp_cap ? m->tmp_cap : BUF_SIZE;
            while (nc < got + k)
                nc *= 2;
            if (nc > len)
                nc = (size_t)len;
            char *nt = realloc(m->tmp, nc);
            if (!nt) {
                *st = nomem(m);
                return NULL;
            }
            m->tmp = nt;
            m->tmp_cap = nc;
        }
        memcpy(m->tmp + got, m->p, k);
        m->p += k;
        got += k;
    }
    return m->tmp;
}

/* Room for one more of n items (the stack or the MARKs) below MAX_STACK; 0 when out of
 * memory, or too deep (m->too_deep, which nomem() reports). */
static int room(vm *m, void **items, size_t *cap, size_t n, size_t size)
{
    if (n >= MAX_STACK) {
        m->too_deep = 1;
        return 0;
    }
    return od_grow(items, cap, n + 1, size);
}

static inline __attribute__((always_inline)) int push(vm *m, od_pv v)
{
    if (__builtin_expect(m->sp == m->stack_cap, 0) &&
        !room(m, (void **)&m->stack, &m->stack_cap, m->sp, sizeof(od_pv)))
        return 0;
    m->stack[m->sp++] = v;
    return 1;
}

/* Values above the topmost MARK: *base receives their start index. */
static od_status pop_mark(vm *m, size_t *base)
{
    if (m->n_marks == 0)
        return fail(m, OD_ERR_FORMAT, "%s needs a MARK on the stack, found none", "this opcode");
    *base = m->marks[--m->n_marks];
    return OD_OK;
}

#define PINNED UINT32_MAX

/* The memo holds a value in 4 bytes when it fits (a tag and a payload under 2^29: strings,
 * containers, trace records, small ints), which is every slot pickle.dump writes for a
 * snapshot but a handful; a wider value goes to a side table and its slot says
 * MEMO_WIDE. Ten million trace entries memoize twenty million slots: 80 MB, not 160. */
#define MEMO_WIDE ((uint32_t)MKV(TAG_MARK, 2)) /* never a value (MARKs are not memoized) */

static od_pv memo_wide_get(const vm *m, size_t idx)
{
    uint32_t k;
    if (od_u64map_get(&m->memo_wide, idx, &k))
        return m->wide[k];
    /* A sparse slot not there was let go (or is the dict fast_dict is reading). */
    return idx < m->memo_cap || idx == m->building ? V_UNSET : V_GONE;
}

/* The value in memo slot idx (< n_memo). */
static inline __attribute__((always_inline)) od_pv memo_at(const vm *m, size_t idx)
{
    if (__builtin_expect(idx >= m->memo_cap, 0))
        return memo_wide_get(m, idx);
    uint32_t x = m->memo[idx];
    return __builtin_expect(x != MEMO_WIDE, 1) ? (od_pv)x : memo_wide_get(m, idx);
}

static int memo_set_wide(vm *m, size_t idx, od_pv v)
{
    int found;
    uint32_t *k = od_u64map_slot(&m->memo_wide, idx, &found);
    if (!k)
        return 0;
    if (!found) {
        if (m->n_wide_free) {
            *k = m->wide_free[--m->n_wide_free];
        } else if (m->n_wide >= UINT32_MAX ||
                   !od_grow((void **)&m->wide, &m->wide_cap, m->n_wide + 1, sizeof *m->wide)) {
            od_u64map_del(&m->memo_wide, idx);
            return 0;
        } else {
            *k = (uint32_t)m->n_wide++;
        }
    }
    m->wide[*k] = v;
    if (idx < m->memo_cap)
        m->memo[idx] = MEMO_WIDE;
    return 1;
}

/* Store v in memo slot idx (< memo_cap, or sparse); 0 when out of memory (the slot
 * unchanged). */
static inline __attribute__((always_inline)) int memo_set(vm *m, size_t idx, od_pv v)
{
    if (__builtin_expect(idx < m->memo_cap && v <= UINT32_MAX && (uint32_t)v != MEMO_WIDE, 1)) {
        m->memo[idx] = (uint32_t)v;
        return 1;
    }
    return memo_set_wide(m, idx, v);
}

/* Let sparse slot idx go: a later fetch of it gives V_GONE. */
static void memo_forget(vm *m, size_t idx)
{
    uint32_t k;
    if (idx < m->memo_cap || !od_u64map_get(&m->memo_wide, idx, &k))
        return;
    od_u64map_del(&m->memo_wide, idx);
    if (od_grow((void **)&m->wide_free, &m->wide_free_cap, m->n_wide_free + 1, sizeof *m->wide_free))
        m->wide_free[m->n_wide_free++] = k;
}

/* Whether the one-step paths may store memo slot n_memo. */
static inline int memo_room(const vm *m)
{
    return m->n_memo < m->memo_cap || m->forgetting;
}

/* Container slots are recycled when a dict is absorbed as a record or a list turns out to
 * be a duplicate: pickle.dump refers to a fresh container only through the stack and the
 * one memo slot it stores it in, so both are redirected to the new value. A container
 * referenced any other way (memoized twice, DUP, fetched back while being filled) is
 * pinned and keeps its slot. Without this a million-entry trace would hold a million dead
 * slots. */
static void pin(vm *m, od_pv v)
{
    if (TAG(v) == TAG_CONT && PAYLOAD(v) < m->cont_memo_cap)
        m->cont_memo[PAYLOAD(v)] = PINNED;
}

/* Redirect the memo slot of container id to v and free the slot; 0 if pinned. */
static int recycle(vm *m, uint32_t id, od_pv v)
{
    od_ptree *t = m->t;
    uint32_t mi = id < m->cont_memo_cap ? m->cont_memo[id] : PINNED;
    if (mi == PINNED)
        return 0;
    if (mi) {
        if (memo_at(m, mi - 1) != MKV(TAG_CONT, id) || !memo_set(m, mi - 1, v))
            return 0;
    }
    cont *c = &t->conts[id];
    if (c->flags & F_OWN)
        free(c->items);
    c->items = NULL;
    c->kind = K_FREE;
    c->flags = 0;
    c->count = t->free_conts;
    t->free_conts = id + 1;
    return 1;
}

/* A value popped off the stack: a container nothing else holds (never memoized, placed in
 * another or DUPed) is freed at once, so a pickle that pushes and pops empty lists (]0 a
 * hundred million times, 194 KB of gzip) costs one container, not one each. */
static void drop(vm *m, od_pv v)
{
    if (TAG(v) != TAG_CONT)
        return;
    uint32_t id = (uint32_t)PAYLOAD(v);
    if (id < m->cont_memo_cap && m->cont_memo[id] == 0 && !(m->t->conts[id].flags & F_FROZEN))
        recycle(m, id, V_NONE);
}

/* A new container whose memo bookkeeping starts clean. */
static od_pv vm_new_cont(vm *m, int kind)
{
    od_pv v = new_cont(m->t, kind);
    if (v == V_FAIL)
        return v;
    uint32_t id = (uint32_t)PAYLOAD(v);
    if (id >= m->cont_memo_cap) {
        size_t nc = m->cont_memo_cap ? m->cont_memo_cap * 2 : 1024;
        while (nc <= id)
            nc *= 2;
        uint32_t *n = realloc(m->cont_memo, nc * sizeof *n);
        if (!n)
            return V_FAIL;
        m->cont_memo = n;
        uint16_t *d = realloc(m->cont_depth, nc * sizeof *d);
        if (!d)
            return V_FAIL;
        m->cont_depth = d;
        uint64_t *o = realloc(m->cont_off, nc * sizeof *o);
        if (!o)
            return V_FAIL;
        m->cont_off = o;
        m->cont_memo_cap = nc;
    }
    m->cont_memo[id] = 0;
    m->cont_off[id] = UINT64_MAX;
    return v;
}

/* The depth a container holding items w[0 .. n) has: 1 + that of the deepest container
 * among them, all frozen (placed items are consumed first). */
static unsigned items_depth(const vm *m, const od_pv *w, size_t n)
{
    unsigned d = 0;
    for (size_t i = 0; i < n; i++)
        if (TAG(w[i]) == TAG_CONT) {
            unsigned x = m->cont_depth[resolve(m->t, (uint32_t)PAYLOAD(w[i]))];
            d = x > d ? x : d;
        }
    return d + 1;
}

/* A value is being placed into a container: freeze it, and share it if an identical
 * list/tuple already exists. V_FAIL when out of memory or nested too deep (nomem()
 * says which). */
static od_pv consume_cont(vm *m, od_pv v);

static inline __attribute__((always_inline)) od_pv consume(vm *m, od_pv v)
{
    /* Most containers placed are already frozen (shared frames): nothing to do. */
    if (TAG(v) == TAG_CONT && !(m->t->conts[PAYLOAD(v)].flags & F_FROZEN))
        return consume_cont(m, v);
    return v;
}

/* The shared list/tuple equal to (kind, items), or UINT32_MAX. */
static uint32_t cons_find(const od_ptree *t, int kind, const od_pv *items, size_t count, uint32_t h)
{
    if (!t->cons_index_cap)
        return UINT32_MAX;
    size_t mask = t->cons_index_cap - 1;
    for (size_t j = h & mask; t->cons_index[j]; j = (j + 1) & mask) {
        uint32_t other = t->cons_index[j] - 1;
        const cont *o = &t->conts[other];
        if (o->kind == kind && o->count == count &&
            (count == 0 || memcmp(o->items, items, count * sizeof(od_pv)) == 0))
            return other;
    }
    return UINT32_MAX;
}

/* Make container id the shared copy of its contents (hash h). */
static void cons_insert(od_ptree *t, uint32_t id, uint32_t h)
{
    if (!index_rehash(&t->cons_index, &t->cons_index_cap, t->n_consed, cons_hash_of, t))
        return; /* not shared: still correct */
    size_t mask = t->cons_index_cap - 1;
    size_t j = h & mask;
    while (t->cons_index[j])
        j = (j + 1) & mask;
    t->cons_index[j] = id + 1;
    t->n_consed++;
    t->conts[id].flags |= F_CONSED;
}

static od_pv consume_cont(vm *m, od_pv v)
{
    od_ptree *t = m->t;
    uint32_t id = resolve(t, (uint32_t)PAYLOAD(v));
    cont *c = &t->conts[id];
    if (c->flags & F_FROZEN)
        return MKV(TAG_CONT, id);
    c->flags |= F_FROZEN;
    int has_items = !(c->flags & F_RUN) && c->kind <= K_SET; /* records, aliases hold none */
    unsigned depth = has_items ? items_depth(m, c->items, c->kind == K_DICT ? dict_words(c) : c->count) : 1;
    if (depth > MAX_DEPTH) {
        m->too_nested = 1;
        return V_FAIL;
    }
    m->cont_depth[id] = (uint16_t)depth;
    /* Only small lists repeat (frames); a long one (a trace) is not worth hashing. */
    if ((c->kind != K_LIST && c->kind != K_TUPLE) || c->count > CONS_MAX_ITEMS || (c->flags & F_RUN))
        return MKV(TAG_CONT, id);
    uint32_t h = cont_hash(c);
    {
        uint32_t other = cons_find(t, c->kind, c->items, c->count, h);
        if (other != UINT32_MAX) {
            {
                if (!(c->flags & F_OWN) && c->count)
                    arena_pop(t, c->items, c->count);
                if (recycle(m, id, MKV(TAG_CONT, other)))
                    return MKV(TAG_CONT, other);
                if (c->flags & F_OWN)
                    free(c->items);
                else if (c->count)
                    arena_pop(t, c->items, c->count);
                c->items = NULL;
                c->kind = K_ALIAS;
                c->flags = F_FROZEN;
                c->count = other;
                return MKV(TAG_CONT, other);
            }
        }
    }
    cons_insert(t, id, h);
    return MKV(TAG_CONT, id);
}


/* The stack's values from base up are being placed into a container; 0 when one cannot be
 * (nomem() says why). */
static int consume_above(vm *m, size_t base)
{
    for (size_t i = base; i < m->sp; i++)
        if ((m->stack[i] = consume(m, m->stack[i])) == V_FAIL)
            return 0;
    return 1;
}

/* A value let go (V_GONE) may only be a value of a dict the hook absorbs: placed anywhere
 * else, the parse cannot go on without it. OD_OK, or the failure. */
static od_status no_gone(vm *m, const od_pv *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (w[i] == V_GONE)
            return fail(m, OD_ERR_LIMIT, "a memo fetch of a trace entry's value%s, which a streaming read does "
                                         "not keep: read the snapshot whole", "");
    return OD_OK;
}

static cont *target(vm *m, od_pv v, int kind1, int kind2, const char *op, od_status *st)
{
    if (TAG(v) != TAG_CONT) {
        *st = fail(m, OD_ERR_FORMAT, "%s applied to a value that is not a container", op);
        return NULL;
    }
    cont *c = &m->t->conts[resolve(m->t, (uint32_t)PAYLOAD(v))];
    if (c->kind != kind1 && c->kind != kind2) {
        *st = fail(m, OD_ERR_FORMAT, "%s applied to the wrong kind of container", op);
        return NULL;
    }
    if (c->flags & F_FROZEN) {
        *st = fail(m, OD_ERR_FORMAT, "%s modifies a container already placed elsewhere "
                                     "(recursive structures are not supported)", op);
        return NULL;
    }
    return c;
}

static od_status do_appends(vm *m, size_t base, const char *op, int kind)
{
    od_status st = OD_OK;
    if (base == 0)
        return fail(m, OD_ERR_FORMAT, "%s has no container below its items", op);
    size_t n = m->sp - base;
    if ((st = no_gone(m, m->stack + base, n)) != OD_OK)
        return st;
    if (!consume_above(m, base))
        return nomem(m);
    cont *c = target(m, m->stack[base - 1], kind, kind == K_SET ? K_SET : K_LIST, op, &st);
    if (!c)
        return st;
    if ((uint64_t)c->count + n > UINT32_MAX)
        return fail(m, OD_ERR_LIMIT, "%s: container too large", op);
    int run = run_extend(m->t, c, m->stack + base, n);
    if (run < 0 || (run == 0 && !cont_extend(m->t, c, c->count, m->stack + base, n)))
        return nomem(m);
    c->count += (uint32_t)n;
    m->sp = base;
    return OD_OK;
}

/* Offer npairs complete pairs of a new, empty dict to the absorb hook: 1 absorbed (*rec
 * set), 0 declined, -1 failed (*st set, at the current opcode). */
static int offer(vm *m, const od_pv *kv, size_t npairs, uint32_t *rec, od_status *st)
{
    od_error herr;
    herr.status = OD_OK;
    herr.msg[0] = '\0';
    int r = m->opt->absorb_dict(m->opt->ud, m->t, kv, npairs, rec, &herr);
    if (r > 0) {
        if (r & OD_ABSORB_PAUSE)
            m->pause = 1;
        if ((r & OD_ABSORB_FORGETTABLE) && m->opt->forget_absorbed && !m->forgetting) {
            m->forgetting = 1; /* from here on new memo slots are sparse */
            m->memo_cap = m->n_memo;
        }
        r = r & OD_ABSORB_FORGETTABLE ? 2 : 1;
    }
    if (r < 0)
        *st = od_fail_at(m->err, herr.status ? herr.status : OD_ERR_FORMAT, op_offset(m), "%s", herr.msg);
    return r;
}

/* Add npairs complete pairs to dict c, shaped when c is new and its keys allow. */
static od_status dict_add(vm *m, cont *c, const od_pv *kv, size_t npairs, const char *op)
{
    if ((uint64_t)c->count + npairs > UINT32_MAX)
        return fail(m, OD_ERR_LIMIT, "%s: dict too large", op);
    if (c->count == 0 && !(c->flags & F_OWN)) {
        uint16_t sh;
        if (find_shape(m->t, kv, npairs, &sh)) {
            od_pv vals[MAX_SHAPE_KEYS];
            for (size_t i = 0; i < npairs; i++)
                vals[i] = kv[2 * i + 1];
            if (!cont_extend(m->t, c, 0, vals, npairs))
                return nomem(m);
            c->flags |= F_SHAPED;
            c->shape = sh;
            c->count = (uint32_t)npairs;
            return OD_OK;
        }
    }
    if (!unshape(m->t, c) || !cont_extend(m->t, c, dict_words(c), kv, 2 * npairs))
        return nomem(m);
    c->count += (uint32_t)npairs;
    return OD_OK;
}

static od_status do_setitems(vm *m, size_t base, const char *op)
{
    od_status st = OD_OK;
    if (base == 0)
        return fail(m, OD_ERR_FORMAT, "%s has no dict below its items", op);
    size_t n = m->sp - base;
    if (n % 2)
        return fail(m, OD_ERR_FORMAT, "%s needs key/value pairs, found an odd number of items", op);
    if (!consume_above(m, base))
        return nomem(m);
    od_pv dv = m->stack[base - 1];
    cont *c = target(m, dv, K_DICT, K_RECORD, op, &st);
    if (!c)
        return st;
    if (c->kind == K_RECORD)
        return fail(m, OD_ERR_FORMAT, "%s adds items to a record already taken (unexpected layout)", op);
    size_t npairs = n / 2;
    if (c->count == 0 && npairs && m->opt && m->opt->absorb_dict) {
        uint32_t rec = 0;
        /* where this dict began, should the hook ask */
        od_ptree *t = m->t;
        uint32_t did = (uint32_t)PAYLOAD(dv);
        uint32_t mi = did < m->cont_memo_cap ? m->cont_memo[did] : PINNED;
        size_t dp = base - 1; /* the dict's place on the stack */
        t->offer_known = did < m->cont_memo_cap && m->cont_off[did] != UINT64_MAX && mi && mi != PINNED;
        if (t->offer_known) {
            t->offer_offset = m->cont_off[did];
            t->offer_memo = mi - 1;
            t->offer_marked = m->n_marks && m->marks[m->n_marks - 1] == dp;
            t->offer_below = dp ? m->stack[dp - 1] : V_NONE;
        }
        int r = offer(m, m->stack + base, npairs, &rec, &st);
        t->offer_known = 0;
        if (r < 0)
            return st;
        if (r > 0) {
            uint32_t id = resolve(m->t, (uint32_t)PAYLOAD(dv));
            uint32_t slot = id < m->cont_memo_cap ? m->cont_memo[id] : PINNED;
            if (recycle(m, id, MKV(TAG_RECORD, rec))) {
                m->stack[base - 1] = MKV(TAG_RECORD, rec);
                if (r == 2 && slot && slot != PINNED)
                    memo_forget(m, slot - 1); /* only a sparse slot goes */
            } else {
                c = &m->t->conts[id];
                c->kind = K_RECORD;
                c->count = rec;
            }
            m->sp = base;
            return OD_OK;
        }
    }
    if ((st = no_gone(m, m->stack + base, n)) != OD_OK || (st = dict_add(m, c, m->stack + base, npairs, op)) != OD_OK)
        return st;
    m->sp = base;
    return OD_OK;
}

static od_status make_seq(vm *m, size_t base, int kind)
{
    size_t n = m->sp - base;
    od_status st = no_gone(m, m->stack + base, n);
    if (st != OD_OK)
        return st;
    if (!consume_above(m, base))
        return nomem(m);
    od_pv v = vm_new_cont(m, kind);
    if (v == V_FAIL)
        return nomem(m);
    cont *c = &m->t->conts[PAYLOAD(v)];
    if (n > UINT32_MAX)
        return fail(m, OD_ERR_LIMIT, "%s too large", "tuple");
    if (n && !cont_extend(m->t, c, 0, m->stack + base, n))
        return nomem(m);
    c->count = (uint32_t)n;
    m->sp = base;
    return push(m, v) ? OD_OK : nomem(m);
}

static od_pv decode_long(vm *m, const unsigned char *b, size_t n)
{
    if (n == 0)
        return MKV(TAG_INT, 0);
    int neg = (b[n - 1] & 0x80) != 0;
    if (n <= 8) {
        uint64_t u = 0;
        for (size_t i = 0; i < n; i++)
            u |= (uint64_t)b[i] << (8 * i);
        if (neg && n < 8)
            u |= ~(uint64_t)0 << (8 * n);
        return make_int(m->t, (int64_t)u);
    }
    /* Wider: an unsigned 64-bit value with zero padding, or too big for 64 bits. */
    int fits_u64 = !neg;
    for (size_t i = 8; i < n && fits_u64; i++)
        if (b[i] != 0)
            fits_u64 = 0;
    if (fits_u64) {
        uint64_t u = 0;
        for (size_t i = 0; i < 8; i++)
            u |= (uint64_t)b[i] << (8 * i);
        if (u <= (uint64_t)INT64_MAX)
            return make_int(m->t, (int64_t)u);
        return new_box(m->t, (box){.kind = B_U64, .as.u = u});
    }
    double d = 0;
    for (size_t i = n; i-- > 0;)
        d = d * 256.0 + (double)(neg ? (unsigned char)~b[i] : b[i]);
    if (neg)
        d = -(d + 1.0);
    return new_box(m->t, (box){.kind = B_BIG, .as.f = d});
}

static const char *opname(unsigned op)
{
    switch (op) {
    case 'c': return "GLOBAL";
    case 0x93: return "STACK_GLOBAL";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    case 'I': return "INT";
    case 'L': return "LONG";
    case 'F': return "FLOAT";
    case 'S': return "STRING";
    case 'V': return "UNICODE";
    case 'p': return "PUT";
    case 'g': return "GET";
    }
    return NULL;
}

static od_status refuse(vm *m, unsigned op)
{
    const char *name = opname(op);
    if (!name)
        return od_fail_at(m->err, OD_ERR_FORMAT, op_offset(m),
                          "unknown pickle opcode 0x%02x: not a pickle, or corrupt", op);
    if (strchr("ILFSVpg", (int)op))
        return od_fail_at(m->err, OD_ERR_FORMAT, op_offset(m),
                          "pickle opcode 0x%02x (%s) belongs to text protocol 0, which snapshots "
                          "never use: expected protocol 2-5", op, name);
    return od_fail_at(m->err, OD_ERR_REFUSED, op_offset(m),
                      "pickle opcode 0x%02x (%s) is refused: snapshots hold plain data only and "
                      "oomdoc never imports or calls anything", op, name);
}

static inline uint64_t le64(uint64_t x)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap64(x);
#else
    return x;
#endif
}

static uint32_t rd_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd_u64(const unsigned char *p)
{
    return (uint64_t)rd_u32(p) | (uint64_t)rd_u32(p + 4) << 32;
}

/* The VM's steps. Those named _OR_RETURN return the failing status from the function
 * they are used in (truncated input, no memory, too few values on the stack). */
#define SAVE_P() (m->p = p)
#define PUSH_STRING_OR_RETURN(len_, bytes_)             \
    do {                                                \
        uint64_t l_ = (len_);                           \
        SAVE_P();                                       \
        st = push_string(m, l_, (bytes_));              \
        LOAD_P();                                       \
        if (st != OD_OK)                                \
            return st;                                  \
    } while (0)
#define LOAD_P() (p = m->p, end = m->end)
#define NEED_OR_RETURN(n, what)                         \
    do {                                                \
        if (end - p < (ptrdiff_t)(n)) {                 \
            SAVE_P();                                   \
            int ok_ = fill(m, (n));                     \
            LOAD_P();                                   \
            if (!ok_)                                   \
                return truncated(m, what);              \
        }                                               \
    } while (0)
#define PUSH_OR_RETURN(v)                       \
    do {                                        \
        od_pv pv_ = (v);                        \
        if (pv_ == V_FAIL || !push(m, pv_))     \
            return nomem(m);                    \
    } while (0)
#define NEED_STACK_OR_RETURN(n)                                                           \
    do {                                                                                  \
        size_t floor_ = m->n_marks ? m->marks[m->n_marks - 1] : 0;                        \
        if (m->sp < floor_ + (n))                                                         \
            return fail(m, OD_ERR_FORMAT, "%s needs more values on the stack", "opcode"); \
    } while (0)

static od_status memo_put_slow(vm *m, uint64_t idx);

/* Drop fast_dict's remembered memo fetches (a memo slot changed under them). */
static void forget_fetches(vm *m)
{
    for (size_t i = 0; i < sizeof m->tmpl / sizeof m->tmpl[0]; i++)
        m->tmpl[i] = (fetch_tmpl){1, 0, 0, 0};
}

/* MEMOIZE: the common case inline. */
static inline __attribute__((always_inline)) od_status memoize(vm *m)
{
    size_t idx = m->n_memo;
    if (__builtin_expect(idx < m->memo_cap && m->sp > (m->n_marks ? m->marks[m->n_marks - 1] : 0), 1)) {
        od_pv v = m->stack[m->sp - 1];
        if (__builtin_expect(v <= UINT32_MAX && (uint32_t)v != MEMO_WIDE, 1)) {
            if (TAG(v) == TAG_CONT) {
                uint32_t *cm = &m->cont_memo[PAYLOAD(v)];
                *cm = (*cm == 0 && idx < PINNED - 1) ? (uint32_t)idx + 1 : PINNED;
            }
            m->memo[idx] = (uint32_t)v;
            m->n_memo = idx + 1;
            return OD_OK;
        }
    }
    return memo_put_slow(m, idx);
}

static od_status memo_put_slow(vm *m, uint64_t idx)
{
    if (m->sp == 0 || (m->n_marks && m->marks[m->n_marks - 1] == m->sp))
        return fail(m, OD_ERR_FORMAT, "%s with an empty stack", "memo store");
    if (m->forgetting && idx >= m->memo_cap && idx != m->n_memo)
        return fail(m, OD_ERR_LIMIT, "a memo store out of order (PUT %s), which a streaming read does not "
                                     "follow: read the snapshot whole", idx < m->n_memo ? "over a used slot" : "past the end");
    int fresh = idx >= m->n_memo;
    if (m->forgetting && idx >= m->memo_cap) {
        m->n_memo = (size_t)idx + 1;
    } else if (idx >= m->n_memo) {
        if (idx > m->n_memo + MEMO_GAP)
            return fail(m, OD_ERR_LIMIT, "memo index far beyond the memo's size%s", "");
        if (!od_grow((void **)&m->memo, &m->memo_cap, (size_t)idx + 1, sizeof *m->memo))
            return nomem(m);
        for (size_t i = m->n_memo; i <= idx; i++)
            m->memo[i] = (uint32_t)V_UNSET;
        m->n_memo = (size_t)idx + 1;
    }
    od_pv v = m->stack[m->sp - 1];
    od_pv old = fresh ? V_UNSET : memo_at(m, idx);
    if (!memo_set(m, idx, v))
        return nomem(m);
    if (TAG(v) == TAG_CONT && PAYLOAD(v) < m->cont_memo_cap) {
        uint32_t *cm = &m->cont_memo[PAYLOAD(v)];
        *cm = (*cm == 0 && idx < PINNED - 1) ? (uint32_t)idx + 1 : PINNED;
    }
    if (old != V_UNSET && old != v) {
        m->memo_overwritten = 1;
        forget_fetches(m);
    }
    if (TAG(old) == TAG_CONT && old != v)
        pin(m, old); /* a memo slot overwritten: keep its old container as is */
    return OD_OK;
}

static inline __attribute__((always_inline)) od_status memo_get(vm *m, uint64_t idx)
{
    od_pv v = idx < m->n_memo ? memo_at(m, idx) : V_UNSET;
    if (v == V_UNSET)
        return fail(m, OD_ERR_FORMAT, "memo lookup of an index never stored%s", "");
    /* Fetching back a container still being filled: it is referenced twice now. */
    if (TAG(v) == TAG_CONT && !(m->t->conts[PAYLOAD(v)].flags & F_FROZEN))
        pin(m, v);
    PUSH_OR_RETURN(v);
    return OD_OK;
}

/* The shared, frozen list holding items (created if no equal list exists yet); V_FAIL
 * when out of memory. */
static od_pv shared_list(vm *m, const od_pv *items, size_t n)
{
    od_ptree *t = m->t;
    uint32_t h = hash_words(items, n, K_LIST);
    uint32_t id = cons_find(t, K_LIST, items, n, h);
    if (id == UINT32_MAX) {
        od_pv v = vm_new_cont(m, K_LIST);
        if (v == V_FAIL)
            return V_FAIL;
        id = (uint32_t)PAYLOAD(v);
        cont *c = &t->conts[id];
        if (!cont_extend(t, c, 0, items, n)) {
            recycle(m, id, V_NONE);
            return V_FAIL;
        }
        c->count = (uint32_t)n;
        c->flags |= F_FROZEN;
        unsigned depth = items_depth(m, items, n);
        if (depth > MAX_DEPTH) { /* the general path says so, where the list is placed */
            recycle(m, id, V_NONE);
            return V_FAIL;
        }
        m->cont_depth[id] = (uint16_t)depth;
        cons_insert(t, id, h);
    }
    return MKV(TAG_CONT, id);
}

/* The memo's value at idx if it is there and finished (not a container still being
 * filled), else V_FAIL: what the one-step paths may take without the general path's
 * bookkeeping. */
static inline od_pv finished_memo(const vm *m, uint64_t idx)
{
    if (idx >= m->n_memo)
        return V_FAIL;
    od_pv v = memo_at(m, idx);
    if (v == V_UNSET || (TAG(v) == TAG_CONT && !(m->t->conts[PAYLOAD(v)].flags & F_FROZEN)))
        return V_FAIL;
    return v;
}

#define FAST_LIST_MAX 999 /* pickle.dump writes lists in batches of 1000 */

/* The raw-bytes list cache: the opcodes between MARK and APPENDS of a list fast_list
 * built, with the shared list they gave, found by a hash of their first 16 bytes. The
 * same bytes give the same list again as long as no memo slot is ever overwritten
 * (pickle.dump never does; a PUT over a used slot turns the cache off), so a repeated
 * stack costs a hash and a compare of its bytes, not a decode of each opcode and a memo
 * lookup per frame. A cached run that matches the input byte for byte and is followed
 * by APPENDS is exactly what decoding would find, whichever other runs share its
 * first bytes. */
#define RAW_PREFIX 16u
#define RAW_MAX_LEN 4096u           /* longer item runs are not cached */
#define RAW_MAX_BYTES (16u << 20)   /* bytes kept in all; past that nothing new is cached */

/* Opcodes that place the value on top of the stack into a container (or finish the
 * pickle with it), so nothing can modify a list fast_list made before it is frozen
 * anyway: APPENDS, SETITEMS, APPEND, SETITEM, ADDITEMS, TUPLE(1-3), LIST, FROZENSET,
 * DICT, STOP. Only then does freezing the list at once change nothing. */
static int consumes_top(unsigned op)
{
    switch (op) {
    case 'e': case 'u': case 'a': case 's': case 0x90: case 't': case 0x85: case 0x86:
    case 0x87: case 'l': case 0x91: case 'd': case '.':
        return 1;
    default:
        return 0;
    }
}

static uint32_t hash_prefix(const unsigned char *s)
{
    uint64_t w0, w1;
    memcpy(&w0, s, 8);
    memcpy(&w1, s + 8, 8);
    uint64_t h = (w0 * 0x9e3779b97f4a7c15ull) ^ w1;
    h *= 0xff51afd7ed558ccdull;
    return (uint32_t)(h ^ (h >> 32));
}

/* The cached list whose item opcodes start at s (at least RAW_PREFIX + 2 bytes before
 * end), with *after set past its APPENDS; V_FAIL if none. */
static od_pv raw_find(const vm *m, const unsigned char *s, const unsigned char *end, uint32_t h,
                      const unsigned char **after)
{
    if (!m->raw_cap || m->memo_overwritten)
        return V_FAIL;
    size_t mask = m->raw_cap - 1;
    size_t avail = (size_t)(end - s);
    for (size_t j = h & mask; m->raw[j].len; j = (j + 1) & mask) {
        const rawent *e = &m->raw[j];
        if (e->hash == h && avail > (size_t)e->len + 1 && s[e->len] == 'e' && consumes_top(s[e->len + 1]) &&
            memcmp(m->raw_bytes + e->off, s, e->len) == 0) {
            *after = s + e->len + 1;
            return e->v;
        }
    }
    return V_FAIL;
}

/* Remember list v for these bytes (best effort: nothing is cached when memory is short). */
static void raw_insert(vm *m, const unsigned char *s, size_t len, uint32_t h, od_pv v)
{
    if (m->memo_overwritten || len == 0 || len > RAW_MAX_LEN || m->raw_used + len > RAW_MAX_BYTES)
        return;
    if ((m->n_raw + 1) * 2 > m->raw_cap) {
        size_t nc = m->raw_cap ? m->raw_cap * 2 : 1024;
        rawent *nr = calloc(nc, sizeof *nr);
        if (!nr)
            return;
        for (size_t i = 0; i < m->raw_cap; i++) {
            if (!m->raw[i].len)
                continue;
            size_t j = m->raw[i].hash & (nc - 1);
            while (nr[j].len)
                j = (j + 1) & (nc - 1);
            nr[j] = m->raw[i];
        }
        free(m->raw);
        m->raw = nr;
        m->raw_cap = nc;
    }
    if (!od_grow((void **)&m->raw_bytes, &m->raw_bytes_cap, m->raw_used + len, 1))
        return;
    memcpy(m->raw_bytes + m->raw_used, s, len);
    size_t mask = m->raw_cap - 1;
    size_t j = h & mask;
    while (m->raw[j].len)
        j = (j + 1) & mask;
    m->raw[j] = (rawent){h, (uint32_t)len, m->raw_used, v};
    m->raw_used += len;
    m->n_raw++;
}

/* EMPTY_LIST MEMOIZE MARK (BINGET|LONG_BINGET)* APPENDS, as pickle.dump writes a list of
 * already-memoized values (a stack's frames), taken in one step: the values are read
 * straight from the memo (or the whole list from the raw-bytes cache), the shared copy is
 * looked up at once, and no temporary container is built. The list is frozen at once,
 * which is only taken when the next opcode places it into a container (consumes_top), so
 * the result is what running the opcodes one by one gives; anything unusual (a value
 * still being built, any other next opcode, the window's end) leaves it to the general
 * path. p points after EMPTY_LIST; returns the new read position, or NULL. */
static const unsigned char *fast_list(vm *m, const unsigned char *p, const unsigned char *end, od_status *st)
{
    const unsigned char *q = p;
    if (end - q < 8 || q[0] != 0x94 || q[1] != '(')
        return NULL;
    q += 2;
    const unsigned char *first = q;
    int hashed = end - first >= (ptrdiff_t)RAW_PREFIX + 2;
    uint32_t h = hashed ? hash_prefix(first) : 0;
    od_pv v = hashed ? raw_find(m, first, end, h, &q) : V_FAIL;
    if (v == V_FAIL) {
        /* Decode: 'h' (0x68) takes 2 bytes, 'j' (0x6a) 5. */
        od_pv items[FAST_LIST_MAX];
        size_t n = 0;
        for (;; n++) {
            if (end - q < 6)
                return NULL;
            uint64_t idx;
            if (*q == 'h') {
                idx = q[1];
                q += 2;
            } else if (*q == 'j') {
                idx = rd_u32(q + 1);
                q += 5;
            } else {
                break;
            }
            od_pv x = n < FAST_LIST_MAX ? finished_memo(m, idx) : V_FAIL;
            if (x == V_FAIL)
                return NULL;
            items[n] = x;
        }
        if (*q != 'e' || !consumes_top(q[1]))
            return NULL;
        v = shared_list(m, items, n);
        if (v == V_FAIL)
            return NULL;
        if (hashed)
            raw_insert(m, first, (size_t)(q - first), h, v);
        q++; /* APPENDS */
    }
    if (!push(m, v)) {
        *st = nomem(m);
        return NULL;
    }
    if (m->defer_list) { /* fast_dict stores it, or lets it go with an absorbed dict */
        m->deferred_slot = m->n_memo++;
        return q;
    }
    if ((*st = memoize(m)) != OD_OK)
        return NULL;
    return q;
}

/* Dispatch: with GCC/Clang each handler ends in its own indirect jump through a table
 * ("threaded code"), which predicts an opcode sequence far better than one switch; other
 * compilers get a switch. */
/* Dispatch tables give every opcode a default, then override some. */
#if defined(__clang__)
#define TABLE_DEFAULTS_OVERRIDDEN_BEGIN \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Winitializer-overrides\"")
#else
#define TABLE_DEFAULTS_OVERRIDDEN_BEGIN \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Woverride-init\"")
#endif
#define TABLE_DEFAULTS_OVERRIDDEN_END _Pragma("GCC diagnostic pop")

#ifndef OD_THREADED
#if defined(__GNUC__)
#define OD_THREADED 1
#else
#define OD_THREADED 0
#endif
#endif

#define FAST_DICT_MAX 32 /* pairs; the absorb hook takes small dicts only */

/* Store v in memo slot idx (< n_memo) as MEMOIZE would; 0 when out of memory. */
static int memo_store(vm *m, size_t idx, od_pv v)
{
    if (!memo_set(m, idx, v))
        return 0;
    if (TAG(v) == TAG_CONT && PAYLOAD(v) < m->cont_memo_cap) {
        uint32_t *cm = &m->cont_memo[PAYLOAD(v)];
        *cm = (*cm == 0 && idx < PINNED - 1) ? (uint32_t)idx + 1 : PINNED;
    }
    return 1;
}

/* A new empty dict, pushed and stored in memo slot midx as EMPTY_DICT MEMOIZE leave it
 * (stack room is the caller's); V_FAIL when out of memory. */
static od_pv push_memo_dict(vm *m, size_t midx)
{
    od_pv d = vm_new_cont(m, K_DICT);
    if (d == V_FAIL || !memo_set(m, midx, d))
        return V_FAIL;
    m->cont_memo[PAYLOAD(d)] = midx < PINNED - 1 ? (uint32_t)midx + 1 : PINNED;
    m->stack[m->sp++] = d;
    return d;
}

/* EMPTY_DICT MEMOIZE MARK (key value)* SETITEMS with simple keys and values, as
 * pickle.dump writes a trace entry, block or frame, taken in one step: the pairs are
 * decoded into a local array and handed to the absorb hook (if any) at once, so an
 * absorbed dict never gets a container or a trip through the value stack. Values may be
 * memo fetches of finished values, ints, None/True/False, short strings, an empty list at
 * the end and lists fast_list takes. At the first opcode it does not take (or the window's
 * end), the state the general path would have built so far - the dict on the stack and
 * memoized, a MARK, the pairs read - is set up, and the general path continues from that
 * opcode; so the result and every error are those of running the opcodes one by one.
 * p points after EMPTY_DICT; returns the position to continue from, or NULL with *st set
 * on failure, or NULL with *st OD_OK when the general path should run EMPTY_DICT itself. */
static const unsigned char *fast_dict(vm *m, const unsigned char *p, const unsigned char *end, od_status *st)
{
    od_ptree *t = m->t;
    if (end - p < 32 || p[0] != 0x94 || p[1] != '(' || !memo_room(m))
        return NULL;
    /* room for the dict and its pairs, within MAX_STACK (else the general path says so) */
    if (m->sp + 2 * FAST_DICT_MAX + 2 > MAX_STACK ||
        (m->sp + 2 * FAST_DICT_MAX + 2 > m->stack_cap &&
         !od_grow((void **)&m->stack, &m->stack_cap, m->sp + 2 * FAST_DICT_MAX + 2, sizeof(od_pv))))
        return NULL;
    size_t midx = m->n_memo;
    if (midx < m->memo_cap)
        m->memo[midx] = (uint32_t)V_UNSET; /* the dict itself: a fetch of it before it is done deopts */
    m->building = midx;
    m->n_memo = midx + 1;
    od_pv kv[2 * FAST_DICT_MAX];
    size_t n = 0;
    /* While forgetting, the memo slots of list values wait here: an absorbed dict's are
     * let go, any other dict's stored. */
    size_t pend_slot[4];
    od_pv pend_val[4];
    int n_pend = 0;
    const unsigned char *q = p + 2;
    od_pv v;
    /* Each opcode's handler dispatches the next one itself (with GCC/Clang), which lets
     * the branch predictor learn the fixed opcode sequence of a trace entry. Before that,
     * memo fetches that repeat the bytes seen at the same position of earlier dicts (the
     * keys, constant values) are taken from the remembered fetch: the same bytes fetch
     * the same value while no memo slot is overwritten. */
#define FD_REPEATS_OR_GOTO_DEOPT()                                      \
    for (;;) {                                                          \
        if (end - q < 16 || n == 2 * FAST_DICT_MAX)                     \
            goto deopt;                                                 \
        const fetch_tmpl *f_ = &m->tmpl[n];                             \
        uint64_t w_;                                                    \
        memcpy(&w_, q, 8);                                              \
        if ((w_ & f_->mask) != f_->raw)                                 \
            break;                                                      \
        kv[n++] = f_->val;                                              \
        q += f_->len;                                                   \
    }
#define FD_REMEMBER(len_, mask_)                                        \
    do {                                                                \
        uint64_t w_;                                                    \
        memcpy(&w_, q, 8);                                              \
        m->tmpl[n] = (fetch_tmpl){w_ & (mask_), (mask_), v, (len_)};    \
    } while (0)
    /* FD_DISPATCH_NEXT ends a handler: it takes the repeated fetches (going to deopt
     * when the window or the dict runs out), then jumps to the next opcode's handler, or
     * is `continue` of the switch's loop, which does the same at its top. */
#if OD_THREADED
#define FD_OP(name) fd_##name:
#define FD_DEFAULT fd_other:
#define FD_DISPATCH_NEXT                                    \
    do {                                                    \
        FD_REPEATS_OR_GOTO_DEOPT();                         \
        goto *fd_table[*q];                                 \
    } while (0)
TABLE_DEFAULTS_OVERRIDDEN_BEGIN
    static const void *const fd_table[256] = {
        [0 ... 255] = &&fd_other,
        ['h'] = &&fd_binget, ['j'] = &&fd_long_binget, ['K'] = &&fd_binint1,
        ['M'] = &&fd_binint2, ['J'] = &&fd_binint, [0x8a] = &&fd_long1, ['N'] = &&fd_none,
        [0x88] = &&fd_true, [0x89] = &&fd_false, [0x8c] = &&fd_short_binunicode,
        [0x95] = &&fd_frame, [0x94] = &&fd_memoize, [']'] = &&fd_empty_list,
        ['u'] = &&fd_setitems,
    };
TABLE_DEFAULTS_OVERRIDDEN_END
    FD_DISPATCH_NEXT;
#else
#define FD_OP(name) case FD_##name:
#define FD_DEFAULT default:
#define FD_DISPATCH_NEXT continue
    enum { FD_binget = 'h', FD_long_binget = 'j', FD_binint1 = 'K', FD_binint2 = 'M',
           FD_binint = 'J', FD_long1 = 0x8a, FD_none = 'N', FD_true = 0x88, FD_false = 0x89,
           FD_short_binunicode = 0x8c, FD_frame = 0x95, FD_memoize = 0x94, FD_empty_list = ']',
           FD_setitems = 'u' };
    for (;;) {
        FD_REPEATS_OR_GOTO_DEOPT();
        switch (*q) {
#endif
/* A plain block, not do-while: FD_DISPATCH_NEXT may be `continue` of the switch's loop. */
#define FD_FETCH_OR_GOTO_DEOPT_THEN_NEXT(idx_, len_, mask_)             \
    {                                                                   \
        if ((v = finished_memo(m, (idx_))) == V_FAIL)                   \
            goto deopt;                                                 \
        FD_REMEMBER((len_), (mask_));                                   \
        q += (len_);                                                    \
        kv[n++] = v;                                                    \
        FD_DISPATCH_NEXT;                                               \
    }
        FD_OP(binget) FD_FETCH_OR_GOTO_DEOPT_THEN_NEXT(q[1], 2, m->mask2);
        FD_OP(long_binget) FD_FETCH_OR_GOTO_DEOPT_THEN_NEXT(rd_u32(q + 1), 5, m->mask5);
#undef FD_FETCH_OR_GOTO_DEOPT_THEN_NEXT
        FD_OP(binint1)
            kv[n++] = MKV(TAG_INT, q[1]);
            q += 2;
            FD_DISPATCH_NEXT;
        FD_OP(binint2)
            kv[n++] = MKV(TAG_INT, (unsigned)q[1] | (unsigned)q[2] << 8);
            q += 3;
            FD_DISPATCH_NEXT;
        FD_OP(binint)
            kv[n++] = make_int(t, (int32_t)rd_u32(q + 1));
            q += 5;
            FD_DISPATCH_NEXT;
        FD_OP(long1) {
            size_t len = q[1];
            if (len == 0 || len >= 8)
                goto deopt;
            uint64_t u;
            memcpy(&u, q + 2, 8);
            u = le64(u);
            int sh = 64 - 8 * (int)len;
            kv[n++] = MKV(TAG_INT, (uint64_t)((int64_t)(u << sh) >> sh) & (((uint64_t)1 << 61) - 1));
            q += 2 + len;
            FD_DISPATCH_NEXT;
        }
        FD_OP(none)
            kv[n++] = V_NONE;
            q++;
            FD_DISPATCH_NEXT;
        FD_OP(true)
            kv[n++] = MKV(TAG_CONST, C_TRUE);
            q++;
            FD_DISPATCH_NEXT;
        FD_OP(false)
            kv[n++] = MKV(TAG_CONST, C_FALSE);
            q++;
            FD_DISPATCH_NEXT;
        FD_OP(short_binunicode) {
            size_t len = q[1];
            if ((size_t)(end - q) < len + 18)
                goto deopt;
            v = intern(t, (const char *)q + 2, len, 0);
            if (v == V_FAIL)
                goto deopt;
            q += 2 + len;
            kv[n++] = v;
            FD_DISPATCH_NEXT;
        }
        FD_OP(frame) /* only a buffering hint */
            q += 9;
            FD_DISPATCH_NEXT;
        FD_OP(memoize) /* of the value just read */
            if (n == 0 || TAG(kv[n - 1]) == TAG_CONT || !memo_room(m) ||
                !memo_set(m, m->n_memo, kv[n - 1]))
                goto deopt;
            m->n_memo++;
            q++;
            FD_DISPATCH_NEXT;
        FD_OP(empty_list) /* an empty last value, or a list fast_list takes */
            if (n % 2 == 0 || q[1] != 0x94 || !memo_room(m))
                goto deopt;
            if (q[2] == 'u') {
                if (m->empty_list == V_FAIL)
                    m->empty_list = shared_list(m, NULL, 0);
                v = m->empty_list;
                if (v == V_FAIL)
                    goto deopt;
                if (m->forgetting && n_pend < 4) {
                    pend_slot[n_pend] = m->n_memo;
                    pend_val[n_pend++] = v;
                } else if (!memo_set(m, m->n_memo, v)) {
                    goto deopt;
                }
                m->n_memo++;
                q += 2;
                kv[n++] = v;
                FD_DISPATCH_NEXT;
            }
            if (q[2] != '(')
                goto deopt;
            {
                m->defer_list = m->forgetting && n_pend < 4;
                const unsigned char *r = fast_list(m, q + 1, end, st);
                if (r && m->defer_list) {
                    pend_slot[n_pend] = m->deferred_slot;
                    pend_val[n_pend++] = m->stack[m->sp - 1];
                }
                m->defer_list = 0;
                if (!r) {
                    if (*st != OD_OK)
                        goto fail;
                    goto deopt;
                }
                kv[n++] = m->stack[--m->sp];
                q = r;
            }
            FD_DISPATCH_NEXT;
        FD_OP(setitems) { /* done */
            if (n % 2)
                goto deopt;
            m->op_p = q;
            uint32_t rec = 0;
            /* where this dict began, should the hook ask (its values left the stack as it was) */
            t->offer_known = 1;
            t->offer_offset = m->base + (uint64_t)(p - m->win) - 1;
            t->offer_memo = midx;
            t->offer_marked = m->n_marks && m->marks[m->n_marks - 1] == m->sp;
            t->offer_below = m->sp ? m->stack[m->sp - 1] : V_NONE;
            int r = n && m->opt && m->opt->absorb_dict ? offer(m, kv, n / 2, &rec, st) : 0;
            t->offer_known = 0;
            if (r < 0)
                goto fail;
            if (r > 0) {
                /* a forgettable record lets go of its sparse slots and its lists' */
                int keep = r == 1;
                if ((keep || midx < m->memo_cap) && !memo_set(m, midx, MKV(TAG_RECORD, rec)))
                    goto nomem;
                for (int i = 0; i < n_pend; i++)
                    if ((keep || pend_slot[i] < m->memo_cap) && !memo_store(m, pend_slot[i], pend_val[i]))
                        goto nomem;
                m->building = SIZE_MAX;
                m->stack[m->sp++] = MKV(TAG_RECORD, rec);
                return q + 1;
            }
            for (int i = 0; i < n_pend; i++)
                if (!memo_store(m, pend_slot[i], pend_val[i]))
                    goto nomem;
            m->building = SIZE_MAX;
            od_pv d = push_memo_dict(m, midx);
            if (d == V_FAIL)
                goto nomem;
            if ((*st = dict_add(m, &t->conts[PAYLOAD(d)], kv, n / 2, "SETITEMS")) != OD_OK)
                return NULL;
            return q + 1;
        }
        FD_DEFAULT
            goto deopt;
#if !OD_THREADED
        }
    }
#endif
#undef FD_OP
#undef FD_DEFAULT
#undef FD_DISPATCH_NEXT
#undef FD_REPEATS_OR_GOTO_DEOPT
#undef FD_REMEMBER
deopt:;
    /* Build what the opcodes read so far would have left: dict, memo slots, MARK, values. */
    m->building = SIZE_MAX;
    for (int i = 0; i < n_pend; i++)
        if (!memo_store(m, pend_slot[i], pend_val[i]))
            goto nomem;
    od_pv d = push_memo_dict(m, midx);
    if (d == V_FAIL)
        goto nomem;
    m->cont_off[PAYLOAD(d)] = m->base + (uint64_t)(p - 1 - m->win);
    if (m->n_marks == m->marks_cap && !room(m, (void **)&m->marks, &m->marks_cap, m->n_marks, sizeof(size_t)))
        goto nomem;
    m->marks[m->n_marks++] = m->sp;
    memcpy(m->stack + m->sp, kv, n * sizeof(od_pv));
    m->sp += n;
    return q;
nomem:
    *st = nomem(m);
fail:
    m->building = SIZE_MAX;
    return NULL;
}

static od_status push_string(vm *m, uint64_t len, int is_bytes)
{
    od_status st = OD_OK;
    const char *s = read_bytes(m, len, &st);
    if (!s)
        return st;
    PUSH_OR_RETURN(intern(m->t, s, (size_t)len, is_bytes));
    return OD_OK;
}

/* Top up the window (at least 16 bytes, so an opcode's arguments are there) and take the
 * next opcode. */
#define FETCH_OP_OR_RETURN()                                              \
    do {                                                                  \
        if (__builtin_expect(end - p < 16, 0)) {                          \
            SAVE_P();                                                     \
            int ok_ = refill_or_eof(m);                                   \
            LOAD_P();                                                     \
            if (!ok_)                                                     \
                return truncated(m, "the pickle (no STOP opcode)");       \
        }                                                                 \
        m->op_p = p;                                                      \
        op = *p++;                                                        \
    } while (0)

/* The VM's dispatch, threaded where OD_THREADED says so. DISPATCH_NEXT ends a handler: it
 * takes the next opcode (returning when the input ends before STOP) and jumps to its
 * handler, or is `continue` of the switch's loop, which does the same at its top. */
#if OD_THREADED
#define OP(hex) op_##hex:
#define OP_DEFAULT op_default:
#define DISPATCH_BEGIN
#define DISPATCH_END
#define DISPATCH_NEXT                                                     \
    do {                                                                  \
        FETCH_OP_OR_RETURN();                                             \
        goto *table[op];                                                  \
    } while (0)
#else
#define OP(hex) case 0x##hex:
#define OP_DEFAULT default:
#define DISPATCH_BEGIN                                                    \
    for (;;) {                                                            \
        FETCH_OP_OR_RETURN();                                             \
        switch (op) {
#define DISPATCH_END } }
#define DISPATCH_NEXT continue
#endif

/* After a dict the absorb hook took with OD_ABSORB_PAUSE: return, to go on from here at
 * the next od_pickle_reader_step. */
#define PAUSE_IF_ASKED()                                                  \
    do {                                                                  \
        if (__builtin_expect(m->pause, 0)) {                              \
            m->p = p;                                                     \
            return OD_OK;                                                 \
        }                                                                 \
    } while (0)

/* Top up the window before an opcode; 0 when the input has ended. */
static int refill_or_eof(vm *m)
{
    fill(m, 16);
    if (m->p == m->end) {
        m->op_p = m->p;
        return 0;
    }
    return 1;
}

static od_status run(vm *m)
{
    od_status st;
    /* The read window lives in registers; m->p / m->end are synced around calls that move it. */
    const unsigned char *p = m->p, *end = m->end;
    unsigned op;
#if OD_THREADED
TABLE_DEFAULTS_OVERRIDDEN_BEGIN
    static const void *const table[256] = {
        [0 ... 255] = &&op_default,
        [0x28] = &&op_28,
        [0x29] = &&op_29,
        [0x2e] = &&op_2e,
        [0x30] = &&op_30,
        [0x31] = &&op_31,
        [0x32] = &&op_32,
        [0x42] = &&op_42,
        [0x43] = &&op_43,
        [0x47] = &&op_47,
        [0x4a] = &&op_4a,
        [0x4b] = &&op_4b,
        [0x4d] = &&op_4d,
        [0x4e] = &&op_4e,
        [0x54] = &&op_54,
        [0x55] = &&op_55,
        [0x58] = &&op_58,
        [0x5d] = &&op_5d,
        [0x61] = &&op_61,
        [0x64] = &&op_64,
        [0x65] = &&op_65,
        [0x68] = &&op_68,
        [0x6a] = &&op_6a,
        [0x6c] = &&op_6c,
        [0x71] = &&op_71,
        [0x72] = &&op_72,
        [0x73] = &&op_73,
        [0x74] = &&op_74,
        [0x75] = &&op_75,
        [0x7d] = &&op_7d,
        [0x80] = &&op_80,
        [0x85] = &&op_85,
        [0x86] = &&op_86,
        [0x87] = &&op_87,
        [0x88] = &&op_88,
        [0x89] = &&op_89,
        [0x8a] = &&op_8a,
        [0x8b] = &&op_8b,
        [0x8c] = &&op_8c,
        [0x8d] = &&op_8d,
        [0x8e] = &&op_8e,
        [0x8f] = &&op_8f,
        [0x90] = &&op_90,
        [0x91] = &&op_91,
        [0x94] = &&op_94,
        [0x95] = &&op_95,
        [0x96] = &&op_96,
    };
TABLE_DEFAULTS_OVERRIDDEN_END
    DISPATCH_NEXT; /* the first dispatch */
#endif
    DISPATCH_BEGIN
        OP(80) /* PROTO */
            NEED_OR_RETURN(1, "PROTO");
            if (*p > 5)
                return fail(m, OD_ERR_FORMAT, "unsupported pickle protocol%s (expected 2-5)", "");
            p++;
            DISPATCH_NEXT;
        OP(95) /* FRAME: only a hint for buffering */
            NEED_OR_RETURN(8, "FRAME");
            p += 8;
            DISPATCH_NEXT;
        OP(2e) { /* STOP */
            if (m->sp == 0 || m->n_marks)
                return fail(m, OD_ERR_FORMAT, "STOP with %s", m->sp ? "an open MARK" : "an empty stack");
            if ((st = no_gone(m, m->stack + m->sp - 1, 1)) != OD_OK)
                return st;
            if ((m->t->root = consume(m, m->stack[m->sp - 1])) == V_FAIL)
                return nomem(m);
            m->t->input_bytes = m->base + (uint64_t)(p - m->win);
            return OD_OK;
        }
        OP(28) /* MARK */
            if (m->n_marks == m->marks_cap && !room(m, (void **)&m->marks, &m->marks_cap, m->n_marks, sizeof(size_t)))
                return nomem(m);
            m->marks[m->n_marks++] = m->sp;
            DISPATCH_NEXT;
        OP(30) /* POP */
            if (m->n_marks && m->marks[m->n_marks - 1] == m->sp)
                m->n_marks--; /* POP of a bare MARK, as Python allows */
            else {
                NEED_STACK_OR_RETURN(1);
                drop(m, m->stack[--m->sp]);
            }
            DISPATCH_NEXT;
        OP(31) { /* POP_MARK */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK)
                return st;
            while (m->sp > base)
                drop(m, m->stack[--m->sp]);
            DISPATCH_NEXT;
        }
        OP(32) /* DUP */
            NEED_STACK_OR_RETURN(1);
            pin(m, m->stack[m->sp - 1]);
            PUSH_OR_RETURN(m->stack[m->sp - 1]);
            DISPATCH_NEXT;
        OP(4e) PUSH_OR_RETURN(V_NONE); DISPATCH_NEXT;
        OP(88) PUSH_OR_RETURN(MKV(TAG_CONST, C_TRUE)); DISPATCH_NEXT;
        OP(89) PUSH_OR_RETURN(MKV(TAG_CONST, C_FALSE)); DISPATCH_NEXT;
        OP(4a) /* BININT */
            NEED_OR_RETURN(4, "BININT");
            PUSH_OR_RETURN(make_int(m->t, (int32_t)rd_u32(p)));
            p += 4;
            DISPATCH_NEXT;
        OP(4b) /* BININT1 */
            NEED_OR_RETURN(1, "BININT1");
            PUSH_OR_RETURN(MKV(TAG_INT, *p));
            p++;
            DISPATCH_NEXT;
        OP(4d) /* BININT2 */
            NEED_OR_RETURN(2, "BININT2");
            PUSH_OR_RETURN(MKV(TAG_INT, (unsigned)p[0] | (unsigned)p[1] << 8));
            p += 2;
            DISPATCH_NEXT;
        OP(8a) { /* LONG1 */
            NEED_OR_RETURN(1, "LONG1");
            size_t n = *p++;
            if (n && n < 8 && end - p >= 8) {
                /* Fast path: load 8 bytes, keep n, sign-extend. */
                uint64_t u;
                memcpy(&u, p, 8);
                u = le64(u);
                int sh = 64 - 8 * (int)n;
                int64_t v = (int64_t)(u << sh) >> sh;
                p += n;
                PUSH_OR_RETURN(make_int(m->t, v));
                DISPATCH_NEXT;
            }
            NEED_OR_RETURN(n, "LONG1");
            PUSH_OR_RETURN(decode_long(m, p, n));
            p += n;
            DISPATCH_NEXT;
        }
        OP(8b) { /* LONG4 */
            NEED_OR_RETURN(4, "LONG4");
            int32_t n = (int32_t)rd_u32(p);
            p += 4;
            if (n < 0)
                return fail(m, OD_ERR_FORMAT, "LONG4 with a negative length%s", "");
            SAVE_P();
            const char *s = read_bytes(m, (uint64_t)n, &st);
            LOAD_P();
            if (!s)
                return st;
            PUSH_OR_RETURN(decode_long(m, (const unsigned char *)s, (size_t)n));
            DISPATCH_NEXT;
        }
        OP(47) { /* BINFLOAT, big-endian */
            NEED_OR_RETURN(8, "BINFLOAT");
            uint64_t u = 0;
            for (int i = 0; i < 8; i++)
                u = (u << 8) | p[i];
            p += 8;
            double d;
            memcpy(&d, &u, sizeof d);
            PUSH_OR_RETURN(new_box(m->t, (box){.kind = B_F64, .as.f = d}));
            DISPATCH_NEXT;
        }
        OP(8c) /* SHORT_BINUNICODE */
            NEED_OR_RETURN(1, "SHORT_BINUNICODE");
            PUSH_STRING_OR_RETURN(*p++, 0);
            DISPATCH_NEXT;
        OP(58) /* BINUNICODE */
            NEED_OR_RETURN(4, "BINUNICODE");
            p += 4;
            PUSH_STRING_OR_RETURN(rd_u32(p - 4), 0);
            DISPATCH_NEXT;
        OP(8d) /* BINUNICODE8 */
            NEED_OR_RETURN(8, "BINUNICODE8");
            p += 8;
            PUSH_STRING_OR_RETURN(rd_u64(p - 8), 0);
            DISPATCH_NEXT;
        OP(43) /* SHORT_BINBYTES */
        OP(55) /* SHORT_BINSTRING */
            NEED_OR_RETURN(1, "SHORT_BINBYTES");
            PUSH_STRING_OR_RETURN(*p++, 1);
            DISPATCH_NEXT;
        OP(42) /* BINBYTES */
        OP(54) /* BINSTRING */
            NEED_OR_RETURN(4, "BINBYTES");
            p += 4;
            PUSH_STRING_OR_RETURN(rd_u32(p - 4), 1);
            DISPATCH_NEXT;
        OP(8e) /* BINBYTES8 */
        OP(96) /* BYTEARRAY8 */
            NEED_OR_RETURN(8, "BINBYTES8");
            p += 8;
            PUSH_STRING_OR_RETURN(rd_u64(p - 8), 1);
            DISPATCH_NEXT;
/* An empty container: taken with what follows in one step when fast() can, else pushed.
 * A plain block, not do-while: DISPATCH_NEXT may be `continue` of the dispatch loop. */
#define ONE_STEP_OR_PUSH_OR_RETURN_THEN_NEXT(fast, kind)                              \
    {                                                                                 \
        st = OD_OK;                                                                   \
        const unsigned char *q_ = m->one_by_one ? NULL : fast(m, p, end, &st);        \
        if (q_) {                                                                     \
            p = q_;                                                                   \
            PAUSE_IF_ASKED();                                                         \
            DISPATCH_NEXT;                                                            \
        }                                                                             \
        if (st != OD_OK)                                                              \
            return st;                                                                \
        PUSH_OR_RETURN(vm_new_cont(m, (kind)));                                       \
        m->cont_off[PAYLOAD(m->stack[m->sp - 1])] = m->base + (uint64_t)(p - 1 - m->win); \
        DISPATCH_NEXT;                                                                \
    }
        OP(5d) ONE_STEP_OR_PUSH_OR_RETURN_THEN_NEXT(fast_list, K_LIST); /* EMPTY_LIST */
        OP(7d) ONE_STEP_OR_PUSH_OR_RETURN_THEN_NEXT(fast_dict, K_DICT); /* EMPTY_DICT */
#undef ONE_STEP_OR_PUSH_OR_RETURN_THEN_NEXT
        OP(8f) PUSH_OR_RETURN(vm_new_cont(m, K_SET)); DISPATCH_NEXT;
        OP(29) PUSH_OR_RETURN(vm_new_cont(m, K_TUPLE)); DISPATCH_NEXT;
        OP(61) /* APPEND */
            NEED_STACK_OR_RETURN(2);
            if ((st = do_appends(m, m->sp - 1, "APPEND", K_LIST)) != OD_OK)
                return st;
            DISPATCH_NEXT;
        OP(65) { /* APPENDS */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK || (st = do_appends(m, base, "APPENDS", K_LIST)) != OD_OK)
                return st;
            DISPATCH_NEXT;
        }
        OP(90) { /* ADDITEMS */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK || (st = do_appends(m, base, "ADDITEMS", K_SET)) != OD_OK)
                return st;
            DISPATCH_NEXT;
        }
        OP(73) /* SETITEM */
            NEED_STACK_OR_RETURN(3);
            if ((st = do_setitems(m, m->sp - 2, "SETITEM")) != OD_OK)
                return st;
            PAUSE_IF_ASKED();
            DISPATCH_NEXT;
        OP(75) { /* SETITEMS */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK || (st = do_setitems(m, base, "SETITEMS")) != OD_OK)
                return st;
            PAUSE_IF_ASKED();
            DISPATCH_NEXT;
        }
        OP(74) { /* TUPLE */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK || (st = make_seq(m, base, K_TUPLE)) != OD_OK)
                return st;
            DISPATCH_NEXT;
        }
        OP(85) OP(86) OP(87) /* TUPLE1..3 */
            NEED_STACK_OR_RETURN(op - 0x84u);
            if ((st = make_seq(m, m->sp - (op - 0x84u), K_TUPLE)) != OD_OK)
                return st;
            DISPATCH_NEXT;
        OP(91) { /* FROZENSET */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK || (st = make_seq(m, base, K_SET)) != OD_OK)
                return st;
            DISPATCH_NEXT;
        }
        OP(6c) { /* LIST */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK || (st = make_seq(m, base, K_LIST)) != OD_OK)
                return st;
            DISPATCH_NEXT;
        }
        OP(64) { /* DICT */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK)
                return st;
            if ((m->sp - base) % 2)
                return fail(m, OD_ERR_FORMAT, "DICT needs key/value pairs%s", "");
            /* Insert an empty dict below the pairs and let SETITEMS fill it. */
            od_pv d = vm_new_cont(m, K_DICT);
            if (d == V_FAIL || !push(m, 0))
                return nomem(m);
            memmove(m->stack + base + 1, m->stack + base, (m->sp - 1 - base) * sizeof(od_pv));
            m->stack[base] = d;
            if ((st = do_setitems(m, base + 1, "DICT")) != OD_OK)
                return st;
            PAUSE_IF_ASKED();
            DISPATCH_NEXT;
        }
        OP(94) /* MEMOIZE */
            if ((st = memoize(m)) != OD_OK)
                return st;
            DISPATCH_NEXT;
        OP(71) /* BINPUT */
            NEED_OR_RETURN(1, "BINPUT");
            if ((st = memo_put_slow(m, *p++)) != OD_OK)
                return st;
            DISPATCH_NEXT;
        OP(72) /* LONG_BINPUT */
            NEED_OR_RETURN(4, "LONG_BINPUT");
            p += 4;
            if ((st = memo_put_slow(m, rd_u32(p - 4))) != OD_OK)
                return st;
            DISPATCH_NEXT;
        OP(68) /* BINGET */
            NEED_OR_RETURN(1, "BINGET");
            if ((st = memo_get(m, *p++)) != OD_OK)
                return st;
            DISPATCH_NEXT;
        OP(6a) /* LONG_BINGET */
            NEED_OR_RETURN(4, "LONG_BINGET");
            p += 4;
            if ((st = memo_get(m, rd_u32(p - 4))) != OD_OK)
                return st;
            DISPATCH_NEXT;
        OP_DEFAULT
            return refuse(m, op);
    DISPATCH_END
}

/* Set up m to parse in with opt into tree t (made here when NULL); 0 when out of memory. */
static int vm_init(vm *m, od_input *in, const od_pickle_options *opt, od_ptree *t, od_error *err)
{
    memset(m, 0, sizeof *m);
    m->in = in;
    m->opt = opt;
    m->err = err;
    m->max_string = opt && opt->max_string_bytes ? opt->max_string_bytes : (256ull << 20);
    m->t = t ? t : calloc(1, sizeof *m->t);
    m->buf = malloc(BUF_SIZE);
    /* The stack exists from the start: `m->stack + base` with an empty stack (MARK then
       TUPLE, MARK then DICT) would otherwise be NULL + 0, which is undefined. */
    m->stack_cap = 64;
    m->stack = malloc(m->stack_cap * sizeof *m->stack);
    if (!m->t || !m->buf || !m->stack)
        return 0;
    m->win = m->p = m->end = m->buf;
    m->empty_list = V_FAIL;
    m->building = SIZE_MAX;
    m->one_by_one = opt && opt->opcode_by_opcode;
    forget_fetches(m);
    static const unsigned char ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0};
    unsigned char two[8] = {0xff, 0xff, 0, 0, 0, 0, 0, 0};
    memcpy(&m->mask5, ones, 8);
    memcpy(&m->mask2, two, 8);
    return 1;
}

/* Free what the parse itself held (not the tree). */
static void vm_release(vm *m)
{
    free(m->buf);
    free(m->stack);
    free(m->marks);
    free(m->memo);
    od_u64map_free(&m->memo_wide);
    free(m->wide);
    free(m->wide_free);
    free(m->cont_memo);
    free(m->cont_depth);
    free(m->cont_off);
    free(m->tmp);
    free(m->raw);
    free(m->raw_bytes);
}

/* Hand the memo over to the tree (od_pickle_options.keep_memo); 0 when out of memory. */
static int keep_memo(vm *m)
{
    kept_memo *k = calloc(1, sizeof *k);
    if (!k)
        return 0;
    k->dense = m->memo;
    k->n_dense = m->forgetting ? m->memo_cap : m->n_memo;
    k->forgetting = m->forgetting;
    k->wide_index = m->memo_wide;
    k->wide = m->wide;
    k->n_wide = m->n_wide;
    k->depth = m->cont_depth;
    k->n_depth = m->cont_memo_cap;
    m->memo = NULL;
    memset(&m->memo_wide, 0, sizeof m->memo_wide);
    m->wide = NULL;
    m->cont_depth = NULL;
    m->t->kept = k;
    return 1;
}

od_status od_pickle_load(od_input *in, const od_pickle_options *opt, od_ptree **out, od_error *err)
{
    od_error local;
    if (!err)
        err = &local;
    od_error_clear(err);
    *out = NULL;
    vm m;
    if (!vm_init(&m, in, opt, NULL, err)) {
        free(m.t);
        free(m.buf);
        free(m.stack);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    m.t->root = V_NONE;
    od_status st;
    /* Protocols 2-5 always open with PROTO: anything else is not a pickle we read. */
    if (!fill(&m, 2))
        st = m.end == m.p && input_failed(&m) == OD_OK
                 ? od_fail_at(err, OD_ERR_FORMAT, 0, "empty input: expected a pickle")
             : m.end > m.p && m.p[0] != 0x80 ? OD_ERR_FORMAT : truncated(&m, "the PROTO header");
    else
        st = OD_OK;
    if (m.end > m.p && m.p[0] != 0x80)
        st = od_fail_at(err, OD_ERR_FORMAT, 0,
                        "not a pickle: protocol 2-5 pickles start with byte 0x80, found 0x%02x%s", m.p[0],
                        m.p[0] >= 0x20 && m.p[0] < 0x7f ? " (this looks like text)" : "");
    else if (st == OD_OK)
        st = run(&m);
    if (st == OD_OK && m.pause)
        st = od_fail_at(err, OD_ERR_FORMAT, op_offset(&m), "the absorb hook paused a whole-pickle read%s", "");
    if (st == OD_OK && opt && opt->keep_memo && !keep_memo(&m))
        st = od_fail(err, OD_ERR_NOMEM, "out of memory");
    vm_release(&m);
    if (st != OD_OK) {
        od_ptree_free(m.t);
        return st;
    }
    *out = m.t;
    return OD_OK;
}

int od_ptree_offer_position(const od_ptree *t, od_pickle_position *pos)
{
    if (!t->offer_known)
        return 0;
    pos->offset = t->offer_offset;
    pos->memo_index = t->offer_memo;
    pos->marked = t->offer_marked;
    od_pv b = t->offer_below;
    const cont *c = TAG(b) == TAG_CONT && PAYLOAD(b) < t->n_conts ? &t->conts[PAYLOAD(b)] : NULL;
    pos->first_in_list = c && c->kind == K_LIST && c->count == 0 && !(c->flags & F_FROZEN);
    return 1;
}

/* ---------- reading part of a pickle again ---------- */

struct od_pickle_reader {
    vm m;
    od_error err;
};

od_status od_pickle_reread(od_input *in, od_ptree *t, const od_pickle_position *pos, const od_pickle_options *opt,
                           od_pickle_reader **out, od_error *err)
{
    *out = NULL;
    const kept_memo *k = t->kept;
    if (!k || !pos->first_in_list)
        return od_fail(err, OD_ERR_ARG, "the pickle cannot be read again from there");
    od_pickle_reader *r = calloc(1, sizeof *r);
    if (!r)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    vm *m = &r->m;
    if (!vm_init(m, in, opt, t, &r->err))
        goto nomem;
    m->base = pos->offset;
    /* The memo as it was where the list began: the dense slots (copied: this read writes
     * to its own, the same values again from the dict's slot on), and the wide and sparse
     * ones below the dict's slot (or the dense end). */
    m->memo_cap = k->n_dense;
    m->n_memo = pos->memo_index;
    m->forgetting = k->forgetting;
    if (k->n_dense && !(m->memo = malloc(k->n_dense * sizeof *m->memo)))
        goto nomem;
    if (k->n_dense)
        memcpy(m->memo, k->dense, k->n_dense * sizeof *m->memo);
    for (size_t j = 0; j < k->wide_index.cap; j++) {
        const od_u64slot *sl = &k->wide_index.slots[j];
        uint64_t idx = sl->key - 1;
        if (sl->key && (idx < pos->memo_index || idx < k->n_dense) && !memo_set_wide(m, idx, k->wide[sl->val]))
            goto nomem;
    }
    /* Containers the first reading made are shared and frozen: pinned here, with their depth. */
    size_t nc = t->n_conts > 1024 ? t->n_conts : 1024;
    m->cont_memo = malloc(nc * sizeof *m->cont_memo);
    m->cont_depth = calloc(nc, sizeof *m->cont_depth);
    m->cont_off = malloc(nc * sizeof *m->cont_off);
    if (!m->cont_memo || !m->cont_depth || !m->cont_off)
        goto nomem;
    m->cont_memo_cap = nc;
    for (size_t j = 0; j < nc; j++) {
        m->cont_memo[j] = PINNED;
        m->cont_off[j] = UINT64_MAX;
    }
    memcpy(m->cont_depth, k->depth, (k->n_depth < t->n_conts ? k->n_depth : t->n_conts) * sizeof *m->cont_depth);
    /* The list the items go to, and its MARK. */
    od_pv list = vm_new_cont(m, K_LIST);
    if (list == V_FAIL || !push(m, list))
        goto nomem;
    if (pos->marked) {
        if (!room(m, (void **)&m->marks, &m->marks_cap, 0, sizeof(size_t)))
            goto nomem;
        m->marks[m->n_marks++] = m->sp;
    }
    *out = r;
    return OD_OK;
nomem:
    vm_release(m);
    free(r);
    return od_fail(err, OD_ERR_NOMEM, "out of memory");
}

od_status od_pickle_reader_step(od_pickle_reader *r, od_error *err)
{
    vm *m = &r->m;
    m->pause = 0;
    od_status st = run(m);
    if (st == OD_OK && !m->pause)
        st = od_fail_at(&r->err, OD_ERR_FORMAT, op_offset(m), "the pickle ended where %s", "the first reading went on");
    if (st != OD_OK && err)
        *err = r->err;
    return st;
}

void od_pickle_reader_free(od_pickle_reader *r)
{
    if (!r)
        return;
    vm_release(&r->m);
    free(r);
}

/* ---------- reading the tree ---------- */

uint64_t od_ptree_input_bytes(const od_ptree *t)
{
    return t->input_bytes;
}

od_pv od_ptree_root(const od_ptree *t)
{
    return t->root;
}

static const cont *get_cont(const od_ptree *t, od_pv v)
{
    if (TAG(v) != TAG_CONT || PAYLOAD(v) >= t->n_conts)
        return NULL;
    return &t->conts[resolve(t, (uint32_t)PAYLOAD(v))];
}

od_pv_type od_pv_typeof(const od_ptree *t, od_pv v)
{
    switch (TAG(v)) {
    case TAG_INT: return OD_PV_INT;
    case TAG_STR: return OD_PV_STR;
    case TAG_BYTES: return OD_PV_BYTES;
    case TAG_BOX:
        if (PAYLOAD(v) >= t->n_boxes)
            return OD_PV_MISSING;
        return t->boxes[PAYLOAD(v)].kind == B_F64 ? OD_PV_FLOAT : OD_PV_INT;
    case TAG_CONST:
        switch (PAYLOAD(v)) {
        case C_NONE: return OD_PV_NONE;
        case C_TRUE: case C_FALSE: return OD_PV_BOOL;
        default: return OD_PV_MISSING;
        }
    case TAG_RECORD:
        return OD_PV_RECORD;
    case TAG_CONT: {
        const cont *c = get_cont(t, v);
        if (!c)
            return OD_PV_MISSING;
        switch (c->kind) {
        case K_LIST: return OD_PV_LIST;
        case K_TUPLE: return OD_PV_TUPLE;
        case K_DICT: return OD_PV_DICT;
        case K_SET: return OD_PV_SET;
        case K_RECORD: return OD_PV_RECORD;
        }
        return OD_PV_MISSING;
    }
    }
    return OD_PV_MISSING;
}

const char *od_pv_type_name(od_pv_type type)
{
    static const char *const names[] = {"nothing", "None", "bool", "int", "float", "str", "bytes",
                                        "list", "tuple", "dict", "set", "record"};
    return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : "?";
}

int od_pv_get_i64(const od_ptree *t, od_pv v, int64_t *out)
{
    switch (TAG(v)) {
    case TAG_INT:
        *out = small_int(v);
        return 1;
    case TAG_CONST:
        if (PAYLOAD(v) == C_TRUE || PAYLOAD(v) == C_FALSE) {
            *out = PAYLOAD(v) == C_TRUE;
            return 1;
        }
        return 0;
    case TAG_BOX: {
        if (PAYLOAD(v) >= t->n_boxes)
            return 0;
        const box *b = &t->boxes[PAYLOAD(v)];
        if (b->kind == B_I64) {
            *out = b->as.i;
            return 1;
        }
        return 0;
    }
    }
    return 0;
}

int od_pv_get_u64(const od_ptree *t, od_pv v, uint64_t *out)
{
    int64_t i;
    if (od_pv_get_i64(t, v, &i)) {
        if (i < 0)
            return 0;
        *out = (uint64_t)i;
        return 1;
    }
    if (TAG(v) == TAG_BOX && PAYLOAD(v) < t->n_boxes && t->boxes[PAYLOAD(v)].kind == B_U64) {
        *out = t->boxes[PAYLOAD(v)].as.u;
        return 1;
    }
    return 0;
}

int od_pv_get_f64(const od_ptree *t, od_pv v, double *out)
{
    int64_t i;
    if (TAG(v) == TAG_BOX && PAYLOAD(v) < t->n_boxes) {
        const box *b = &t->boxes[PAYLOAD(v)];
        switch (b->kind) {
        case B_F64: case B_BIG: *out = b->as.f; return 1;
        case B_U64: *out = (double)b->as.u; return 1;
        case B_I64: *out = (double)b->as.i; return 1;
        }
    }
    if (TAG(v) == TAG_INT && od_pv_get_i64(t, v, &i)) {
        *out = (double)i;
        return 1;
    }
    return 0;
}

int od_pv_get_bool(const od_ptree *t, od_pv v, int *out)
{
    int64_t i;
    if (!od_pv_get_i64(t, v, &i) || (i != 0 && i != 1))
        return 0;
    *out = (int)i;
    return 1;
}

const char *od_pv_str(const od_ptree *t, od_pv v, size_t *len)
{
    if ((TAG(v) != TAG_STR && TAG(v) != TAG_BYTES) || PAYLOAD(v) >= t->n_strs)
        return NULL;
    const strent *e = &t->strs[PAYLOAD(v)];
    if (len)
        *len = e->len;
    return e->text;
}

/* The interned value of text if the pickle contained that str, else OD_PV_MISSING_VALUE:
 * dict keys compare with it cheaply. */
static od_pv find_str(const od_ptree *t, const char *text)
{
    size_t len = strlen(text);
    uint32_t h = hash_bytes(text, len, 0);
    if (!t->str_index_cap)
        return OD_PV_MISSING_VALUE;
    size_t mask = t->str_index_cap - 1;
    for (size_t j = h & mask; t->str_index[j]; j = (j + 1) & mask) {
        const strent *e = &t->strs[t->str_index[j] - 1];
        if (e->hash == h && e->len == len && !e->is_bytes && memcmp(e->text, text, len) == 0)
            return MKV(TAG_STR, t->str_index[j] - 1);
    }
    return OD_PV_MISSING_VALUE;
}

size_t od_pv_len(const od_ptree *t, od_pv v)
{
    const cont *c = get_cont(t, v);
    if (!c || c->kind == K_RECORD)
        return 0;
    return c->count;
}

od_pv od_pv_item(const od_ptree *t, od_pv v, size_t i)
{
    const cont *c = get_cont(t, v);
    if (!c || c->kind == K_DICT || c->kind == K_RECORD || i >= c->count)
        return OD_PV_MISSING_VALUE;
    if (c->flags & F_RUN)
        return MKV(TAG_RECORD, (uint64_t)run_first(t, c) + i);
    return c->items[i];
}

const od_pv *od_pv_items(const od_ptree *t, od_pv v, size_t *n)
{
    const cont *c = get_cont(t, v);
    if (!c || (c->kind != K_LIST && c->kind != K_TUPLE && c->kind != K_SET)) {
        *n = 0;
        return NULL;
    }
    /* A run's items are written out on first request (the tree is not shared between
     * threads); out of memory reads as no items. */
    if ((c->flags & F_RUN) && !expand_run((od_ptree *)t, (cont *)c)) {
        *n = 0;
        return NULL;
    }
    *n = c->count;
    return c->items;
}

int od_pv_record_run(const od_ptree *t, od_pv v, uint32_t *first, size_t *n)
{
    const cont *c = get_cont(t, v);
    if (!c || !(c->flags & F_RUN))
        return 0;
    *first = run_first(t, c);
    *n = c->count;
    return 1;
}

od_pv od_pv_dict_key(const od_ptree *t, od_pv v, size_t i)
{
    const cont *c = get_cont(t, v);
    if (!c || c->kind != K_DICT || i >= c->count)
        return OD_PV_MISSING_VALUE;
    return (c->flags & F_SHAPED) ? t->shapes[c->shape].keys[i] : c->items[2 * i];
}

od_pv od_pv_dict_value(const od_ptree *t, od_pv v, size_t i)
{
    const cont *c = get_cont(t, v);
    if (!c || c->kind != K_DICT || i >= c->count)
        return OD_PV_MISSING_VALUE;
    return (c->flags & F_SHAPED) ? c->items[i] : c->items[2 * i + 1];
}

/* dict[key] compared by value identity (interned str, small int, None, bool); the last
 * pair wins if a key repeats. OD_PV_MISSING_VALUE when absent or v is not a dict. */
static od_pv dict_get(const od_ptree *t, od_pv v, od_pv key)
{
    const cont *c = get_cont(t, v);
    if (!c || c->kind != K_DICT)
        return OD_PV_MISSING_VALUE;
    if (c->flags & F_SHAPED) {
        const od_pv *keys = t->shapes[c->shape].keys;
        for (size_t i = c->count; i-- > 0;)
            if (keys[i] == key)
                return c->items[i];
        return OD_PV_MISSING_VALUE;
    }
    for (size_t i = c->count; i-- > 0;)
        if (c->items[2 * i] == key)
            return c->items[2 * i + 1];
    return OD_PV_MISSING_VALUE;
}

od_pv od_pv_dict_gets(const od_ptree *t, od_pv v, const char *key)
{
    od_pv k = find_str(t, key);
    if (k == OD_PV_MISSING_VALUE)
        return k;
    return dict_get(t, v, k);
}

uint32_t od_pv_identity(const od_ptree *t, od_pv v)
{
    if (TAG(v) != TAG_CONT || PAYLOAD(v) >= t->n_conts)
        return UINT32_MAX;
    return resolve(t, (uint32_t)PAYLOAD(v));
}

uint32_t od_pv_record(const od_ptree *t, od_pv v)
{
    if (TAG(v) == TAG_RECORD)
        return (uint32_t)PAYLOAD(v);
    const cont *c = get_cont(t, v);
    return c && c->kind == K_RECORD ? c->count : UINT32_MAX;
}
