/* pickle.c - a pickle virtual machine for plain data that never executes anything.
 *
 * Values are 64-bit words tagged in their low 3 bits: small ints inline, strings and
 * containers by index. Container items live in a chunked arena (most containers are
 * filled by a single APPENDS/SETITEMS and never grow); lists that keep growing move to a
 * buffer of their own. Completed lists and tuples are hash-consed, so the hundreds of
 * thousands of identical stack-frame lists of a snapshot are stored once. */
#include "pickle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_INT = 0, TAG_STR = 1, TAG_CONT = 2, TAG_BOX = 3, TAG_BYTES = 4, TAG_CONST = 5,
       TAG_MARK = 6 };
enum { C_NONE = 0, C_FALSE = 1, C_TRUE = 2, C_MISSING = 3, C_UNSET = 4 };
enum { K_LIST, K_TUPLE, K_DICT, K_SET, K_RECORD, K_ALIAS };
enum { F_OWN = 1, F_FROZEN = 2, F_SHAPED = 4, F_CONSED = 8 };
enum { B_I64, B_U64, B_F64, B_BIG };

#define MKV(tag, payload) ((((od_pv)(payload)) << 3) | (tag))
#define TAG(v) ((unsigned)((v) & 7))
#define PAYLOAD(v) ((v) >> 3)
#define V_NONE MKV(TAG_CONST, C_NONE)
#define V_UNSET MKV(TAG_CONST, C_UNSET)
#define V_MARK MKV(TAG_MARK, 0)
#define V_FAIL MKV(TAG_MARK, 1) /* allocation failed; never a value */
#define SMALL_MIN (-((int64_t)1 << 60))
#define SMALL_MAX (((int64_t)1 << 60) - 1)
#define ARENA_CHUNK (1u << 17)        /* values per arena chunk (1 MiB) */
#define BUF_SIZE (1u << 16)          /* input window; longer strings go through tmp */
#define MAX_SHAPES 65535u
#define MAX_SHAPE_KEYS 64u
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
    uint32_t *cons_index;  /* container id + 1 */
    size_t cons_index_cap, n_consed;
    chunk *arena;
    cchunk *chars;
};

/* ---------- storage ---------- */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 1;
    size_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > SIZE_MAX / 2 / elem)
            return 0;
        nc *= 2;
    }
    void *np = realloc(*p, nc * elem);
    if (!np)
        return 0;
    *p = np;
    *cap = nc;
    return 1;
}

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

static uint32_t cont_hash(const od_ptree *t, const cont *c)
{
    return hash_words(c->items, c->count, c->kind);
}

static uint32_t cons_hash_of(const od_ptree *t, uint32_t id)
{
    return cont_hash(t, &t->conts[id]);
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
    if (!grow((void **)&t->strs, &t->cap_strs, t->n_strs + 1, sizeof *t->strs))
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
    if (!grow((void **)&t->boxes, &t->cap_boxes, t->n_boxes + 1, sizeof *t->boxes))
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
    if (t->n_conts >= UINT32_MAX - 1)
        return V_FAIL;
    if (!grow((void **)&t->conts, &t->cap_conts, t->n_conts + 1, sizeof *t->conts))
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

/* Store n more items (or pairs, as 2n words for an unshaped dict) at the end of c. */
static int cont_extend(od_ptree *t, cont *c, size_t used_words, const od_pv *w, size_t n)
{
    size_t total = used_words + n;
    if (n == 0)
        return 1;
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
        !grow((void **)&t->shapes, &t->cap_shapes, t->n_shapes + 1, sizeof *t->shapes))
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
    free(t);
}

/* ---------- the virtual machine ---------- */

typedef struct {
    od_ptree *t;
    od_input *in;
    const od_pickle_options *opt;
    uint64_t max_string;
    od_error *err;
    unsigned char *buf;
    const unsigned char *p, *end;
    uint64_t base;        /* input offset of buf[0] */
    int eof;
    od_pv *stack;
    size_t sp, stack_cap;
    size_t *marks;
    size_t n_marks, marks_cap;
    od_pv *memo;
    size_t n_memo, memo_cap;
    char *tmp;            /* long strings */
    size_t tmp_cap;
    uint64_t op_off;      /* offset of the opcode being run */
} vm;

static od_status fail(vm *m, od_status st, const char *fmt, const char *detail)
{
    return od_fail_at(m->err, st, m->op_off, fmt, detail);
}

static od_status nomem(vm *m)
{
    return od_fail_at(m->err, OD_ERR_NOMEM, m->op_off, "out of memory");
}

static od_status input_failed(vm *m)
{
    od_status st = od_input_error(m->in, m->err);
    return st;
}

/* Make at least n bytes available at m->p; returns 0 if the input ends first. */
static int fill(vm *m, size_t n)
{
    size_t have = (size_t)(m->end - m->p);
    if (have >= n)
        return 1;
    if (m->eof)
        return 0;
    memmove(m->buf, m->p, have);
    m->base += (uint64_t)(m->p - m->buf);
    m->p = m->buf;
    m->end = m->buf + have;
    while ((size_t)(m->end - m->p) < n && !m->eof) {
        size_t got = od_input_read(m->in, m->buf + have, BUF_SIZE - have);
        if (got == 0)
            m->eof = 1;
        have += got;
        m->end = m->buf + have;
    }
    return (size_t)(m->end - m->p) >= n;
}

static od_status truncated(vm *m, const char *what)
{
    if (input_failed(m) != OD_OK)
        return m->err->status;
    return od_fail_at(m->err, OD_ERR_FORMAT, m->base + (uint64_t)(m->end - m->buf),
                      "truncated pickle: input ends inside %s", what);
}

/* Read a length-prefixed byte string of len bytes into a contiguous buffer. */
static const char *read_bytes(vm *m, uint64_t len, od_status *st)
{
    if (len > m->max_string) {
        *st = od_fail_at(m->err, OD_ERR_LIMIT, m->op_off,
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

static inline int push(vm *m, od_pv v)
{
    if (__builtin_expect(m->sp == m->stack_cap, 0) &&
        !grow((void **)&m->stack, &m->stack_cap, m->sp + 1, sizeof(od_pv)))
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

/* A value is being placed into a container: freeze it, and share it if an identical
 * list/tuple already exists. */
static od_pv consume_cont(vm *m, od_pv v);

static inline od_pv consume(vm *m, od_pv v)
{
    return TAG(v) == TAG_CONT ? consume_cont(m, v) : v;
}

static od_pv consume_cont(vm *m, od_pv v)
{
    od_ptree *t = m->t;
    uint32_t id = resolve(t, (uint32_t)PAYLOAD(v));
    cont *c = &t->conts[id];
    if (c->flags & F_FROZEN)
        return MKV(TAG_CONT, id);
    c->flags |= F_FROZEN;
    if (c->kind != K_LIST && c->kind != K_TUPLE)
        return MKV(TAG_CONT, id);
    uint32_t h = cont_hash(t, c);
    if (t->cons_index_cap) {
        size_t mask = t->cons_index_cap - 1;
        for (size_t j = h & mask; t->cons_index[j]; j = (j + 1) & mask) {
            uint32_t other = t->cons_index[j] - 1;
            const cont *o = &t->conts[other];
            if (o->kind == c->kind && o->count == c->count &&
                (c->count == 0 || memcmp(o->items, c->items, c->count * sizeof(od_pv)) == 0)) {
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
    if (!index_rehash(&t->cons_index, &t->cons_index_cap, t->n_consed, cons_hash_of, t))
        return MKV(TAG_CONT, id); /* not shared: still correct */
    size_t mask = t->cons_index_cap - 1;
    size_t j = h & mask;
    while (t->cons_index[j])
        j = (j + 1) & mask;
    t->cons_index[j] = id + 1;
    t->n_consed++;
    c->flags |= F_CONSED;
    return MKV(TAG_CONT, id);
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
    for (size_t i = base; i < m->sp; i++)
        m->stack[i] = consume(m, m->stack[i]);
    cont *c = target(m, m->stack[base - 1], kind, kind == K_SET ? K_SET : K_LIST, op, &st);
    if (!c)
        return st;
    if ((uint64_t)c->count + n > UINT32_MAX)
        return fail(m, OD_ERR_LIMIT, "%s: container too large", op);
    if (!cont_extend(m->t, c, c->count, m->stack + base, n))
        return nomem(m);
    c->count += (uint32_t)n;
    m->sp = base;
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
    for (size_t i = base; i < m->sp; i++)
        m->stack[i] = consume(m, m->stack[i]);
    od_pv dv = m->stack[base - 1];
    cont *c = target(m, dv, K_DICT, K_RECORD, op, &st);
    if (!c)
        return st;
    if (c->kind == K_RECORD)
        return fail(m, OD_ERR_FORMAT, "%s adds items to a record already taken (unexpected layout)", op);
    size_t npairs = n / 2;
    if (c->count == 0 && npairs && m->opt && m->opt->absorb_dict) {
        uint32_t rec = 0;
        od_error herr;
        herr.status = OD_OK;
        herr.msg[0] = '\0';
        int r = m->opt->absorb_dict(m->opt->ud, m->t, m->stack + base, npairs, &rec, &herr);
        if (r < 0)
            return od_fail_at(m->err, herr.status ? herr.status : OD_ERR_FORMAT, m->op_off, "%s", herr.msg);
        if (r > 0) {
            c = &m->t->conts[resolve(m->t, (uint32_t)PAYLOAD(dv))];
            c->kind = K_RECORD;
            c->count = rec;
            m->sp = base;
            return OD_OK;
        }
    }
    if ((uint64_t)c->count + npairs > UINT32_MAX)
        return fail(m, OD_ERR_LIMIT, "%s: dict too large", op);
    if (c->count == 0 && !(c->flags & F_OWN)) {
        uint16_t sh;
        if (find_shape(m->t, m->stack + base, npairs, &sh)) {
            od_pv vals[MAX_SHAPE_KEYS];
            for (size_t i = 0; i < npairs; i++)
                vals[i] = m->stack[base + 2 * i + 1];
            if (!cont_extend(m->t, c, 0, vals, npairs))
                return nomem(m);
            c->flags |= F_SHAPED;
            c->shape = sh;
            c->count = (uint32_t)npairs;
            m->sp = base;
            return OD_OK;
        }
    }
    if (!unshape(m->t, c) || !cont_extend(m->t, c, dict_words(c), m->stack + base, n))
        return nomem(m);
    c->count += (uint32_t)npairs;
    m->sp = base;
    return OD_OK;
}

static od_status make_seq(vm *m, size_t base, int kind)
{
    size_t n = m->sp - base;
    for (size_t i = base; i < m->sp; i++)
        m->stack[i] = consume(m, m->stack[i]);
    od_pv v = new_cont(m->t, kind);
    if (v == V_FAIL)
        return nomem(m);
    cont *c = &m->t->conts[PAYLOAD(v)];
    if (n > UINT32_MAX)
        return fail(m, OD_ERR_LIMIT, "%s too large", "tuple");
    if (!cont_extend(m->t, c, 0, m->stack + base, n))
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
        return od_fail_at(m->err, OD_ERR_FORMAT, m->op_off,
                          "unknown pickle opcode 0x%02x: not a pickle, or corrupt", op);
    if (strchr("ILFSVpg", (int)op))
        return od_fail_at(m->err, OD_ERR_FORMAT, m->op_off,
                          "pickle opcode 0x%02x (%s) belongs to text protocol 0, which snapshots "
                          "never use: expected protocol 2-5", op, name);
    return od_fail_at(m->err, OD_ERR_REFUSED, m->op_off,
                      "pickle opcode 0x%02x (%s) is refused: snapshots hold plain data only and "
                      "oomdoc never imports or calls anything", op, name);
}

static uint32_t rd_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd_u64(const unsigned char *p)
{
    return (uint64_t)rd_u32(p) | (uint64_t)rd_u32(p + 4) << 32;
}

#define NEED(n, what)                           \
    do {                                        \
        if (m->end - m->p < (ptrdiff_t)(n) && !fill(m, (n))) \
            return truncated(m, what);          \
    } while (0)
#define PUSH(v)                                 \
    do {                                        \
        od_pv pv_ = (v);                        \
        if (pv_ == V_FAIL || !push(m, pv_))     \
            return nomem(m);                    \
    } while (0)
#define NEED_STACK(n)                                                                    \
    do {                                                                                 \
        size_t floor_ = m->n_marks ? m->marks[m->n_marks - 1] : 0;                        \
        if (m->sp < floor_ + (n))                                                        \
            return fail(m, OD_ERR_FORMAT, "%s needs more values on the stack", "opcode"); \
    } while (0)

static od_status memo_put(vm *m, uint64_t idx)
{
    if (m->sp == 0 || (m->n_marks && m->marks[m->n_marks - 1] == m->sp))
        return fail(m, OD_ERR_FORMAT, "%s with an empty stack", "memo store");
    if (idx >= m->n_memo) {
        if (idx > m->n_memo + MEMO_GAP)
            return fail(m, OD_ERR_LIMIT, "memo index far beyond the memo's size%s", "");
        if (!grow((void **)&m->memo, &m->memo_cap, (size_t)idx + 1, sizeof(od_pv)))
            return nomem(m);
        for (size_t i = m->n_memo; i <= idx; i++)
            m->memo[i] = V_UNSET;
        m->n_memo = (size_t)idx + 1;
    }
    m->memo[idx] = m->stack[m->sp - 1];
    return OD_OK;
}

static inline od_status memo_get(vm *m, uint64_t idx)
{
    if (idx >= m->n_memo || m->memo[idx] == V_UNSET)
        return fail(m, OD_ERR_FORMAT, "memo lookup of an index never stored%s", "");
    PUSH(m->memo[idx]);
    return OD_OK;
}

static od_status push_string(vm *m, uint64_t len, int is_bytes)
{
    od_status st = OD_OK;
    const char *s = read_bytes(m, len, &st);
    if (!s)
        return st;
    PUSH(intern(m->t, s, (size_t)len, is_bytes));
    return OD_OK;
}

static od_status run(vm *m)
{
    od_status st;
    for (;;) {
        if (m->end - m->p < 16)
            fill(m, 16);
        if (m->p == m->end) {
            m->op_off = m->base + (uint64_t)(m->p - m->buf);
            return truncated(m, "the pickle (no STOP opcode)");
        }
        m->op_off = m->base + (uint64_t)(m->p - m->buf);
        unsigned op = *m->p++;
        switch (op) {
        case 0x80: /* PROTO */
            NEED(1, "PROTO");
            if (*m->p > 5)
                return fail(m, OD_ERR_FORMAT, "unsupported pickle protocol%s (expected 2-5)", "");
            m->p++;
            break;
        case 0x95: /* FRAME: only a hint for buffering */
            NEED(8, "FRAME");
            m->p += 8;
            break;
        case '.': { /* STOP */
            if (m->sp == 0 || m->n_marks)
                return fail(m, OD_ERR_FORMAT, "STOP with %s", m->sp ? "an open MARK" : "an empty stack");
            m->t->root = consume(m, m->stack[m->sp - 1]);
            m->t->input_bytes = m->base + (uint64_t)(m->p - m->buf);
            return OD_OK;
        }
        case '(': /* MARK */
            if (m->n_marks == m->marks_cap &&
                !grow((void **)&m->marks, &m->marks_cap, m->n_marks + 1, sizeof(size_t)))
                return nomem(m);
            m->marks[m->n_marks++] = m->sp;
            break;
        case '0': /* POP */
            if (m->n_marks && m->marks[m->n_marks - 1] == m->sp)
                m->n_marks--; /* POP of a bare MARK, as Python allows */
            else {
                NEED_STACK(1);
                m->sp--;
            }
            break;
        case '1': { /* POP_MARK */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK)
                return st;
            m->sp = base;
            break;
        }
        case '2': /* DUP */
            NEED_STACK(1);
            PUSH(m->stack[m->sp - 1]);
            break;
        case 'N': PUSH(V_NONE); break;
        case 0x88: PUSH(MKV(TAG_CONST, C_TRUE)); break;
        case 0x89: PUSH(MKV(TAG_CONST, C_FALSE)); break;
        case 'J': /* BININT */
            NEED(4, "BININT");
            PUSH(make_int(m->t, (int32_t)rd_u32(m->p)));
            m->p += 4;
            break;
        case 'K': /* BININT1 */
            NEED(1, "BININT1");
            PUSH(MKV(TAG_INT, *m->p));
            m->p++;
            break;
        case 'M': /* BININT2 */
            NEED(2, "BININT2");
            PUSH(MKV(TAG_INT, (unsigned)m->p[0] | (unsigned)m->p[1] << 8));
            m->p += 2;
            break;
        case 0x8a: { /* LONG1 */
            NEED(1, "LONG1");
            size_t n = *m->p++;
            NEED(n, "LONG1");
            PUSH(decode_long(m, m->p, n));
            m->p += n;
            break;
        }
        case 0x8b: { /* LONG4 */
            NEED(4, "LONG4");
            int32_t n = (int32_t)rd_u32(m->p);
            m->p += 4;
            if (n < 0)
                return fail(m, OD_ERR_FORMAT, "LONG4 with a negative length%s", "");
            const char *s = read_bytes(m, (uint64_t)n, &st);
            if (!s)
                return st;
            PUSH(decode_long(m, (const unsigned char *)s, (size_t)n));
            break;
        }
        case 'G': { /* BINFLOAT, big-endian */
            NEED(8, "BINFLOAT");
            uint64_t u = 0;
            for (int i = 0; i < 8; i++)
                u = (u << 8) | m->p[i];
            m->p += 8;
            double d;
            memcpy(&d, &u, sizeof d);
            PUSH(new_box(m->t, (box){.kind = B_F64, .as.f = d}));
            break;
        }
        case 0x8c: /* SHORT_BINUNICODE */
            NEED(1, "SHORT_BINUNICODE");
            if ((st = push_string(m, *m->p++, 0)) != OD_OK)
                return st;
            break;
        case 'X': /* BINUNICODE */
            NEED(4, "BINUNICODE");
            m->p += 4;
            if ((st = push_string(m, rd_u32(m->p - 4), 0)) != OD_OK)
                return st;
            break;
        case 0x8d: /* BINUNICODE8 */
            NEED(8, "BINUNICODE8");
            m->p += 8;
            if ((st = push_string(m, rd_u64(m->p - 8), 0)) != OD_OK)
                return st;
            break;
        case 'C': /* SHORT_BINBYTES */
        case 'U': /* SHORT_BINSTRING */
            NEED(1, "SHORT_BINBYTES");
            if ((st = push_string(m, *m->p++, 1)) != OD_OK)
                return st;
            break;
        case 'B': /* BINBYTES */
        case 'T': /* BINSTRING */
            NEED(4, "BINBYTES");
            m->p += 4;
            if ((st = push_string(m, rd_u32(m->p - 4), 1)) != OD_OK)
                return st;
            break;
        case 0x8e: /* BINBYTES8 */
        case 0x96: /* BYTEARRAY8 */
            NEED(8, "BINBYTES8");
            m->p += 8;
            if ((st = push_string(m, rd_u64(m->p - 8), 1)) != OD_OK)
                return st;
            break;
        case ']': PUSH(new_cont(m->t, K_LIST)); break;
        case '}': PUSH(new_cont(m->t, K_DICT)); break;
        case 0x8f: PUSH(new_cont(m->t, K_SET)); break;
        case ')': PUSH(new_cont(m->t, K_TUPLE)); break;
        case 'a': /* APPEND */
            NEED_STACK(2);
            if ((st = do_appends(m, m->sp - 1, "APPEND", K_LIST)) != OD_OK)
                return st;
            break;
        case 'e': { /* APPENDS */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK || (st = do_appends(m, base, "APPENDS", K_LIST)) != OD_OK)
                return st;
            break;
        }
        case 0x90: { /* ADDITEMS */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK || (st = do_appends(m, base, "ADDITEMS", K_SET)) != OD_OK)
                return st;
            break;
        }
        case 's': /* SETITEM */
            NEED_STACK(3);
            if ((st = do_setitems(m, m->sp - 2, "SETITEM")) != OD_OK)
                return st;
            break;
        case 'u': { /* SETITEMS */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK || (st = do_setitems(m, base, "SETITEMS")) != OD_OK)
                return st;
            break;
        }
        case 't': { /* TUPLE */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK || (st = make_seq(m, base, K_TUPLE)) != OD_OK)
                return st;
            break;
        }
        case 0x85: case 0x86: case 0x87: /* TUPLE1..3 */
            NEED_STACK(op - 0x84u);
            if ((st = make_seq(m, m->sp - (op - 0x84u), K_TUPLE)) != OD_OK)
                return st;
            break;
        case 0x91: { /* FROZENSET */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK || (st = make_seq(m, base, K_SET)) != OD_OK)
                return st;
            break;
        }
        case 'l': { /* LIST */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK || (st = make_seq(m, base, K_LIST)) != OD_OK)
                return st;
            break;
        }
        case 'd': { /* DICT */
            size_t base = 0;
            if ((st = pop_mark(m, &base)) != OD_OK)
                return st;
            if ((m->sp - base) % 2)
                return fail(m, OD_ERR_FORMAT, "DICT needs key/value pairs%s", "");
            /* Insert an empty dict below the pairs and let SETITEMS fill it. */
            od_pv d = new_cont(m->t, K_DICT);
            if (d == V_FAIL || !push(m, 0))
                return nomem(m);
            memmove(m->stack + base + 1, m->stack + base, (m->sp - 1 - base) * sizeof(od_pv));
            m->stack[base] = d;
            if ((st = do_setitems(m, base + 1, "DICT")) != OD_OK)
                return st;
            break;
        }
        case 0x94: /* MEMOIZE */
            if ((st = memo_put(m, m->n_memo)) != OD_OK)
                return st;
            break;
        case 'q': /* BINPUT */
            NEED(1, "BINPUT");
            if ((st = memo_put(m, *m->p++)) != OD_OK)
                return st;
            break;
        case 'r': /* LONG_BINPUT */
            NEED(4, "LONG_BINPUT");
            m->p += 4;
            if ((st = memo_put(m, rd_u32(m->p - 4))) != OD_OK)
                return st;
            break;
        case 'h': /* BINGET */
            NEED(1, "BINGET");
            if ((st = memo_get(m, *m->p++)) != OD_OK)
                return st;
            break;
        case 'j': /* LONG_BINGET */
            NEED(4, "LONG_BINGET");
            m->p += 4;
            if ((st = memo_get(m, rd_u32(m->p - 4))) != OD_OK)
                return st;
            break;
        default:
            return refuse(m, op);
        }
    }
}

od_status od_pickle_load(od_input *in, const od_pickle_options *opt, od_ptree **out, od_error *err)
{
    od_error local;
    if (!err)
        err = &local;
    od_error_clear(err);
    *out = NULL;
    vm m = {0};
    m.in = in;
    m.opt = opt;
    m.err = err;
    m.max_string = opt && opt->max_string_bytes ? opt->max_string_bytes : (256ull << 20);
    m.t = calloc(1, sizeof *m.t);
    m.buf = malloc(BUF_SIZE);
    if (!m.t || !m.buf) {
        free(m.t);
        free(m.buf);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    m.p = m.end = m.buf;
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
    free(m.buf);
    free(m.stack);
    free(m.marks);
    free(m.memo);
    free(m.tmp);
    if (st != OD_OK) {
        od_ptree_free(m.t);
        return st;
    }
    *out = m.t;
    return OD_OK;
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

uint32_t od_pv_str_index(const od_ptree *t, od_pv v)
{
    if ((TAG(v) != TAG_STR && TAG(v) != TAG_BYTES) || PAYLOAD(v) >= t->n_strs)
        return UINT32_MAX;
    return (uint32_t)PAYLOAD(v);
}

od_pv od_ptree_find_str(const od_ptree *t, const char *text)
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
    return c->items[i];
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

od_pv od_pv_dict_get(const od_ptree *t, od_pv v, od_pv key)
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
    od_pv k = od_ptree_find_str(t, key);
    if (k == OD_PV_MISSING_VALUE)
        return k;
    return od_pv_dict_get(t, v, k);
}

uint32_t od_pv_identity(const od_ptree *t, od_pv v)
{
    if (TAG(v) != TAG_CONT || PAYLOAD(v) >= t->n_conts)
        return UINT32_MAX;
    return resolve(t, (uint32_t)PAYLOAD(v));
}

uint32_t od_pv_record(const od_ptree *t, od_pv v)
{
    const cont *c = get_cont(t, v);
    return c && c->kind == K_RECORD ? c->count : UINT32_MAX;
}
