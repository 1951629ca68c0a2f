/* index.c - the tables of rules.def and contexts.def, and the index that finds all of their
 * phrases in a line in one pass (scan.h). */
#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "read/triage/scan.h"

/* The figures functions (figures.c) the rows name. */
#define RULE(id, fw, kind, lib, fold, any, all, not_, figures, example) int figures(tr_scan *, od_oom_report *, const od_tr_line *);
#define READER(id, any)
#define LABEL(...)
#include "read/triage/rules.def"
#undef RULE

#define RULE(id, fw, kind, lib, fold, any, all, not_, figures, example) \
    [OD_RULE_##id] = {#id, fw, kind, lib, fold, any, all, not_, figures, example},
const od_tr_rule od_tr_rules[OD_N_RULES] = {
#include "read/triage/rules.def"
};
#undef RULE
#undef READER
#define RULE(...)
#define READER(id, any) [OD_READER_##id] = any,
const char *const od_tr_readers[OD_N_READERS] = {
#include "read/triage/rules.def"
};
#undef RULE
#undef READER
#undef LABEL

const od_tr_context od_tr_contexts[OD_N_CONTEXTS] = {
#define CONTEXT(phrase, what, runtime) {phrase, what, runtime},
#include "read/triage/contexts.def"
#undef CONTEXT
};

/* ---------- phrases ---------- */

enum { ROLE_ANY, ROLE_ALL, ROLE_NOT, ROLE_CONTEXT, ROLE_READER };

typedef struct {
    const char *text;  /* into the table's string: not NUL-terminated */
    uint8_t len;
    uint8_t flags;     /* OD_TR_* */
    uint8_t role;
    uint8_t slot;      /* ROLE_ALL: which of the row's `all` phrases */
    uint16_t owner;    /* the rule, context row or reader */
    uint8_t key_end;   /* text[key_end] is the key's last letter */
    uint8_t retired;   /* a context whose row the input is known to name */
    uint32_t key;      /* three letters, blanks left out, folded */
} phrase;

#define NEAR_LOG 15
#define BUCKETS_LOG 10
#define MAX_PHRASES 1024

/* The table a line's bytes are probed in: the low five bits of three letters (which folds case,
 * and is a superset of the keys: what it lets through is looked up exactly in the buckets). */
static unsigned near_of(uint32_t key)
{
    return (((key >> 16) & 31) << 10) | (((key >> 8) & 31) << 5) | (key & 31);
}

struct od_tr_index {
    uint8_t near[1u << NEAR_LOG];     /* 1 where some key's near_of lands */
    uint16_t head[1u << BUCKETS_LOG]; /* phrase index + 1, chained by next */
    uint16_t next[MAX_PHRASES];
    phrase ph[MAX_PHRASES];
    size_t n;
};

static unsigned bucket_of(uint32_t key)
{
    return (unsigned)((key * 0x85EBCA6Bu) >> (32 - BUCKETS_LOG));
}

/* Trigrams so common in logs that a key made of one finds little. */
static const char *const common[] = {
    "the", "and", "ing", "ion", "ent", "tio", "for", "ate", "all", "ter", "mem", "emo", "mor", "ory", "cud", "uda",
    "gpu", "dev", "evi", "vic", "ice", "err", "rro", "ror", "oca", "loc", "cat", "out", "res", "ess", "pro", "roc",
    "oce", "ces", "tor", "orc", "rch", "siz", "ize", "ail", "fai", "led", "ill", "all", "ted", "que", "ues", "est",
};

/* How good a key the three letters ending at squeezed position k make: one across a word
 * break, or with a digit or punctuation, is rarer than letters of one word. */
static int key_score(const char *text, const uint8_t *at, const char *sq, size_t k)
{
    int s = 0;
    if (at[k] - at[k - 2] > 2)
        s += 4;
    for (size_t i = k - 2; i <= k; i++) {
        unsigned char c = (unsigned char)text[at[i]];
        if (!isalpha(c))
            s += 2;
        else if (isupper(c) && at[i] > 0 && islower((unsigned char)text[at[i] - 1]))
            s += 1;
    }
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
        if (!memcmp(sq + k - 2, common[i], 3))
            s -= 5;
    return s;
}

/* Add the phrase text[0..len) (its markers already taken off). */
static void add(od_tr_index *ix, const char *text, size_t len, unsigned flags, int role, size_t slot, size_t owner)
{
    char sq[256];
    uint8_t at[256];
    size_t m = 0;
    assert(len < 256 && ix->n < MAX_PHRASES);
    for (size_t i = 0; i < len; i++)
        if (text[i] != ' ') {
            sq[m] = (char)OD_TR_FOLD(text[i]);
            at[m++] = (uint8_t)i;
        }
    assert(m >= 3); /* every phrase has three letters to key it by (tests check the tables) */
    if (m < 3)
        return;
    size_t best = 2;
    int best_s = key_score(text, at, sq, 2);
    for (size_t k = 3; k < m; k++) {
        int sc = key_score(text, at, sq, k);
        if (sc > best_s) {
            best_s = sc;
            best = k;
        }
    }
    phrase *p = &ix->ph[ix->n];
    p->text = text;
    p->len = (uint8_t)len;
    p->flags = (uint8_t)flags;
    p->role = (uint8_t)role;
    p->slot = (uint8_t)slot;
    p->owner = (uint16_t)owner;
    p->key_end = at[best];
    p->retired = 0;
    p->key = (uint32_t)(unsigned char)sq[best - 2] << 16 | (uint32_t)(unsigned char)sq[best - 1] << 8 |
             (unsigned char)sq[best];
    ix->near[near_of(p->key)] = 1;
    unsigned h = bucket_of(p->key);
    ix->next[ix->n] = ix->head[h];
    ix->head[h] = (uint16_t)(ix->n + 1);
    ix->n++;
}

/* Add each phrase of the '|'-separated list (markers "=", "^" before, "*" after). */
static void add_list(od_tr_index *ix, const char *list, int role, size_t owner)
{
    size_t slot = 0;
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, '|');
        if (!e)
            e = p + strlen(p);
        unsigned flags = 0;
        const char *s = p;
        for (; s < e && (*s == '=' || *s == '^'); s++)
            flags |= *s == '=' ? OD_TR_EXACT : OD_TR_LINE_START;
        const char *f = e;
        if (f > s && f[-1] == '*') {
            flags |= OD_TR_PREFIX;
            f--;
        }
        while (s < f && *s == ' ')
            s++;
        while (f > s && f[-1] == ' ')
            f--;
        if (f > s)
            add(ix, s, (size_t)(f - s), flags, role, slot++, owner);
        p = *e ? e + 1 : e;
    }
}

od_tr_index *od_tr_index_new(void)
{
    od_tr_index *ix = calloc(1, sizeof *ix);
    if (!ix)
        return NULL;
    for (size_t k = 0; k < OD_N_RULES; k++) {
        add_list(ix, od_tr_rules[k].any, ROLE_ANY, k);
        add_list(ix, od_tr_rules[k].all, ROLE_ALL, k);
        add_list(ix, od_tr_rules[k].not_, ROLE_NOT, k);
    }
    for (size_t c = 0; c < OD_N_CONTEXTS; c++)
        add_list(ix, od_tr_contexts[c].phrase, ROLE_CONTEXT, c);
    for (size_t r = 0; r < OD_N_READERS; r++)
        add_list(ix, od_tr_readers[r], ROLE_READER, r);
    return ix;
}

void od_tr_index_free(od_tr_index *ix)
{
    free(ix);
}

void od_tr_index_retire_context(od_tr_index *ix, size_t c)
{
    memset(ix->near, 0, sizeof ix->near);
    for (size_t i = 0; i < ix->n; i++) {
        phrase *p = &ix->ph[i];
        if (p->role == ROLE_CONTEXT && p->owner == c)
            p->retired = 1;
        if (!p->retired)
            ix->near[near_of(p->key)] = 1;
    }
}

/* ---------- finding them ---------- */

static int same(unsigned char t, unsigned char c, unsigned flags)
{
    return (flags & OD_TR_EXACT) ? t == c : OD_TR_FOLD(t) == OD_TR_FOLD(c);
}

/* Does p's phrase match around x, the text byte its key's last letter matched (within
 * [lo, hi))? Sets *start, *end; *cut when it failed only for running off lo or hi. */
static int verify(const phrase *p, const char *lo, const char *x, const char *hi, const char **start,
                  const char **end, int *cut_front, int *cut_back)
{
    const char *q = x + 1;
    for (size_t j = (size_t)p->key_end + 1; j-- > 0;) {
        unsigned char c = (unsigned char)p->text[j];
        if (c == ' ') {
            while (q > lo && OD_TR_BLANK(q[-1]))
                q--;
            continue;
        }
        while (q > lo && q[-1] == OD_TR_GLUE)
            q--;
        if (q <= lo) {
            *cut_front = 1;
            return 0;
        }
        if (!same((unsigned char)q[-1], c, p->flags))
            return 0;
        q--;
    }
    const char *r = x + 1;
    for (size_t j = (size_t)p->key_end + 1; j < p->len; j++) {
        unsigned char c = (unsigned char)p->text[j];
        if (c == ' ') {
            while (r < hi && OD_TR_BLANK(*r))
                r++;
            continue;
        }
        while (r < hi && *r == OD_TR_GLUE)
            r++;
        if (r >= hi) {
            *cut_back = 1;
            return 0;
        }
        if (!same((unsigned char)*r, c, p->flags))
            return 0;
        r++;
    }
    if (p->flags & OD_TR_LINE_START) {
        for (const char *b = q; b > lo; b--)
            if (!OD_TR_BLANK(b[-1]))
                return 0;
    } else if (q > lo && !(memchr(p->text, ' ', p->len) && isupper((unsigned char)*q)) &&
               !od_tr_boundary_ok((unsigned char)q[-1], (unsigned char)p->text[0])) {
        return 0;
    }
    if (!(p->flags & OD_TR_PREFIX) && r < hi && !(memchr(p->text, ' ', p->len) && isupper((unsigned char)*r)) &&
        !od_tr_boundary_ok((unsigned char)*r, (unsigned char)p->text[p->len - 1]))
        return 0;
    *start = q;
    *end = r;
    return 1;
}

typedef void (*on_match)(void *ctx, const phrase *p, const char *start, const char *end);

/* Every phrase of the index in [p, hi) (the line begins at lo): on(ctx, ...) for each match.
 * *cut_front / *cut_back as verify() says, for rule phrases. */
static void each_match(const od_tr_index *ix, const char *lo, const char *p, const char *hi, on_match on, void *ctx,
                       int *cut_front, int *cut_back)
{
    unsigned near = 0;
    uint32_t key = 0;
    for (const char *x = p; x < hi; x++) {
        unsigned char c = (unsigned char)*x;
        if (OD_TR_BLANK(c))
            continue;
        near = ((near << 5) | (c & 31u)) & ((1u << NEAR_LOG) - 1);
        if (!ix->near[near])
            continue;
        /* the exact key: the last three non-blank bytes, folded */
        int got = 0;
        key = 0;
        for (size_t k = (size_t)(x - p) + 1; k-- > 0 && got < 3;)
            if (!OD_TR_BLANK(p[k]))
                key |= (uint32_t)OD_TR_FOLD(p[k]) << (8 * got++);
        if (got < 3)
            continue;
        for (unsigned h = ix->head[bucket_of(key)]; h; h = ix->next[h - 1]) {
            const phrase *ph = &ix->ph[h - 1];
            if (ph->key != key || ph->retired)
                continue;
            const char *s, *e;
            int cf = 0, cb = 0;
            if (verify(ph, lo, x, hi, &s, &e, &cf, &cb))
                on(ctx, ph, s, e);
            else if (ph->role < ROLE_CONTEXT) {
                *cut_front |= cf;
                *cut_back |= cb;
            }
        }
    }
}

/* The first phrase found for rule k on this line: its slots start empty. */
static void touch(od_tr_hits *h, size_t k)
{
    if (OD_SET_HAS(h->touched, k))
        return;
    OD_SET_ADD(h->touched, k);
    h->any_at[k] = h->any_end[k] = NULL;
    h->all_found[k] = h->not_found[k] = 0;
}

static void record(void *ctx, const phrase *p, const char *s, const char *e)
{
    od_tr_hits *h = ctx;
    switch (p->role) {
    case ROLE_ANY:
        touch(h, p->owner);
        if (!h->any_at[p->owner] || s < h->any_at[p->owner]) {
            h->any_at[p->owner] = s;
            h->any_end[p->owner] = e;
            h->any_slot[p->owner] = p->slot;
        }
        break;
    case ROLE_ALL:
    case ROLE_NOT:
        touch(h, p->owner);
        if (p->role == ROLE_ALL)
            h->all_found[p->owner] |= (uint8_t)(1u << p->slot);
        else
            h->not_found[p->owner] = 1;
        break;
    case ROLE_CONTEXT:
        OD_SET_ADD(h->contexts, p->owner);
        break;
    case ROLE_READER:
        h->readers |= 1u << p->owner;
        break;
    }
}

void od_tr_hits_of(const od_tr_index *ix, const char *lo, const char *p, const char *hi, od_tr_hits *h)
{
    memset(&h->touched, 0, sizeof h->touched);
    memset(&h->contexts, 0, sizeof h->contexts);
    h->readers = 0;
    h->cut_front = h->cut_back = 0;
    each_match(ix, lo, p, hi, record, h, &h->cut_front, &h->cut_back);
}

/* How many phrases the list has (its `all` mask is that many bits). */
static unsigned list_count(const char *list)
{
    unsigned n = 0;
    for (const char *p = list; p && *p; p++)
        if (p == list || p[-1] == '|')
            n++;
    return n;
}

int od_tr_rule_reads(const od_tr_hits *h, size_t k)
{
    if (!OD_SET_HAS(h->touched, k) || !h->any_at[k] || h->not_found[k])
        return 0;
    unsigned n = list_count(od_tr_rules[k].all);
    return h->all_found[k] == (uint8_t)((1u << n) - 1);
}

typedef struct {
    const char *at;
    int crossed;
} cross_ctx;

static void crossing(void *ctx, const phrase *p, const char *s, const char *e)
{
    cross_ctx *c = ctx;
    if ((p->role == ROLE_ANY || p->role == ROLE_READER) && s < c->at && e > c->at)
        c->crossed = 1;
}

int od_tr_crosses(const od_tr_index *ix, const char *p, const char *hi, size_t at)
{
    cross_ctx c = {p + at, 0};
    int cf = 0, cb = 0;
    each_match(ix, p, p, hi, crossing, &c, &cf, &cb);
    return c.crossed;
}

int od_tr_may_cross(const od_tr_index *ix, const unsigned char a[2], const unsigned char b[2])
{
    uint32_t k1 = (uint32_t)OD_TR_FOLD(a[0]) << 16 | (uint32_t)OD_TR_FOLD(a[1]) << 8 | OD_TR_FOLD(b[0]);
    uint32_t k2 = (uint32_t)OD_TR_FOLD(a[1]) << 16 | (uint32_t)OD_TR_FOLD(b[0]) << 8 | OD_TR_FOLD(b[1]);
    return ix->near[near_of(k1)] || ix->near[near_of(k2)];
}
