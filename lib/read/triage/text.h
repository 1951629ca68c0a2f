/* text.h - the triage's text primitives: the one rule for finding a phrase in free text
 * (case, spacing and word boundaries), and sizes as the frameworks print them. Internal to
 * read/triage/; nothing here allocates.
 *
 * The phrase rule. Letters compare without regard to case (unless the phrase is exact). A
 * space in a phrase stands for any run of blank bytes in the text, an empty one included:
 * spaces, tabs, CRs and the other control bytes but '\n' (so "error:out of memory" and
 * "CUDA  out of memory" read as the phrases with one space). A phrase that begins (ends) with a
 * letter does not begin (end) inside a word: no letter before (after) it ("OOM" is not in
 * "room", "CUDA OOM" not in "CUDA OOMs"), one with a digit no digit there ("exitcode: -9" is
 * not "exitcode: -90"); except that a phrase of several words may be glued to a capital
 * ("whyCUDA out of memory", "out of memorySearch": a paste that lost a space or a break). */
#ifndef OD_TRIAGE_TEXT_H
#define OD_TRIAGE_TEXT_H

#include <ctype.h>
#include <stddef.h>
#include <stdint.h>

/* How a phrase is matched, besides the rule above. */
enum {
    OD_TR_EXACT = 1,      /* letters compare with their case ("=Limit:" in rules.def) */
    OD_TR_LINE_START = 2, /* only blanks before it on its line ("^MemoryError") */
    OD_TR_PREFIX = 4,     /* the word may go on after it ("jax*" reads "jaxlib") */
};

/* A line break rejoined as nothing (a word a logger's fixed-width wrap split): every match
 * skips it. */
#define OD_TR_GLUE '\x04'

extern const unsigned char od_tr_fold_table[256];  /* ASCII letters to lower case */
extern const unsigned char od_tr_blank_table[256]; /* 1 for what a phrase's space matches */
#define OD_TR_FOLD(c) (od_tr_fold_table[(unsigned char)(c)])
#define OD_TR_BLANK(c) (od_tr_blank_table[(unsigned char)(c)])

/* May the text byte t stand next to a phrase whose outer character is c (the word-boundary
 * half of the rule above)? */
static inline int od_tr_boundary_ok(unsigned char t, unsigned char c)
{
    if (isalpha(c))
        return !isalpha(t);
    if (isdigit(c))
        return !isdigit(t);
    return 1;
}
/* Does the text at p read ph[0..n) (its line begins at lo, the text goes on to hi)? Returns
 * the match's end, or NULL. */
const char *od_tr_match_at(const char *lo, const char *p, const char *hi, const char *ph, size_t n, unsigned flags);
/* The first place in [p, hi) where ph (NUL-terminated) matches, its line beginning at lo
 * (lo <= p); *mend (may be NULL) receives the match's end. NULL when none. */
const char *od_tr_find(const char *lo, const char *p, const char *hi, const char *ph, unsigned flags,
                       const char **mend);
/* od_tr_find on the line [line, le), no flags. */
const char *od_tr_ifind(const char *line, const char *le, const char *ph);
/* Does [lo, p) end with ph? Returns where the match begins, or NULL. */
const char *od_tr_ends(const char *lo, const char *p, const char *ph);
/* Does the text at p (up to hi) begin with ph? Returns the match's end, or NULL. (No word
 * boundary before p is required: p is where the caller stands.) */
const char *od_tr_starts(const char *p, const char *hi, const char *ph);

/* Exact bytes: the first needle in [p, end), or NULL. */
const char *od_tr_find_exact(const char *p, const char *end, const char *needle);
int od_tr_starts_exact(const char *p, const char *end, const char *s);
const char *od_tr_skip_sp(const char *p, const char *end);
/* An unsigned decimal at p (at most 19 digits): its end, or NULL. */
const char *od_tr_parse_uint(const char *p, const char *end, uint64_t *out);

/* A size as printed: "2.00 GiB", "1.50GiB", "8589934592 bytes", "0 B" (units of either
 * case; every K/M/G/T is a power of 1024 in these texts, MPS's "GB" included). A figure with
 * a fractional part converts exactly as printed (9.71 GiB = round(971 * 2^30 / 100)). */
typedef struct {
    const char *start, *end; /* the token, number through unit */
    uint64_t bytes;
    int rounded;             /* printed with a fractional part */
    uint64_t unit;           /* the unit's bytes (1 for a plain number of bytes) */
} od_tr_size;
int od_tr_parse_size(const char *p, const char *end, od_tr_size *t);
/* The next size token in [p, end) that starts at a word boundary (line: where the line
 * begins, for the byte before p). */
int od_tr_next_size(const char *p, const char *end, const char *line, od_tr_size *t);
/* XLA's compact sizes "21.95G", "530.00M", "0B", "384.0K" (1024-based) exactly at p. */
int od_tr_parse_xla_size(const char *p, const char *end, od_tr_size *t);

#endif
