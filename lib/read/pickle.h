/* pickle.h - a safe reader for what Python's pickle.dump writes for plain data.
 *
 * Reads protocols 2-5: dict, list, tuple, set, str, bytes, int (incl. LONG1/LONG4 big
 * ints), float, bool, None, the memo, FRAME, MARK/APPENDS/SETITEMS. It never executes
 * anything: GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ(_EX), PERSID,
 * BINPERSID, EXT*, out-of-band buffers and unknown opcodes fail with OD_ERR_REFUSED /
 * OD_ERR_FORMAT naming the opcode and its byte offset.
 *
 * The result is a tree of compact values (od_pv) owned by an od_ptree, which the caller
 * frees with od_ptree_free (NULL is fine). Strings are interned (equal strings are the
 * same value), and lists/tuples of up to 4096 items are shared once complete
 * (hash-consed): snapshots repeat the same stack frames hundreds of thousands of times,
 * and this keeps one copy.
 * Consequently a list may not be modified after it was placed in another container
 * (pickle.dump never does this; recursive structures that would are refused). */
#ifndef OD_PICKLE_H
#define OD_PICKLE_H

#include "oomdoc/input.h"
#include "oomdoc/od.h"

/* A value: a tagged 64-bit word, meaningful only with the od_ptree it came from. */
typedef uint64_t od_pv;

typedef struct od_ptree od_ptree;

typedef enum {
    OD_PV_MISSING, /* "no such value" (od_pv_dict_gets on an absent key, out of range) */
    OD_PV_NONE,
    OD_PV_BOOL,
    OD_PV_INT,
    OD_PV_FLOAT,
    OD_PV_STR,
    OD_PV_BYTES,
    OD_PV_LIST,
    OD_PV_TUPLE,
    OD_PV_DICT,
    OD_PV_SET,
    OD_PV_RECORD   /* a dict the absorb hook took over (see od_pickle_options) */
} od_pv_type;

#define OD_PV_MISSING_VALUE ((od_pv)0x1d) /* the od_pv of type OD_PV_MISSING */

/* What an absorb hook may return besides 0 (keep the dict) and -1 (fail): OD_ABSORB, with
 * these flags or'ed in. */
#define OD_ABSORB 1             /* the dict becomes a record */
#define OD_ABSORB_FORGETTABLE 2 /* nothing refers back to its values but dicts the hook
                                   absorbs this way too (see forget_absorbed) */
#define OD_ABSORB_PAUSE 4       /* od_pickle_reader_step returns after this dict */

typedef struct {
    /* Optional streaming hook, called when a new, empty dict receives its first items
     * (kv holds npairs key/value pairs, values complete). Return OD_ABSORB (flags above
     * or'ed in) to absorb the dict: it becomes an OD_PV_RECORD carrying *record and its
     * items are not stored (a consumer keeps its own compact form, e.g. a million trace
     * entries); 0 to keep it as a dict; -1 to stop parsing with *err filled (its offset
     * is set by the reader). */
    int (*absorb_dict)(void *ud, const od_ptree *t, const od_pv *kv, size_t npairs,
                       uint32_t *record, od_error *err);
    void *ud;
    /* Longest str/bytes/long accepted; 0 means 256 MiB. Longer -> OD_ERR_LIMIT. */
    uint64_t max_string_bytes;
    /* Nonzero: run every opcode on its own, without the one-step paths for dicts and
     * lists. The result and every error are the same either way (tests compare them). */
    int opcode_by_opcode;
    /* Nonzero: from the first dict absorbed with OD_ABSORB_FORGETTABLE on, the memo slots
     * of such dicts and of the lists among their values are let go (a streaming read of
     * a trace keeps memory to what is live: pickle.dump refers back to a trace entry's
     * frames list only from the entries of the same block, which the hook takes too).
     * Such a value fetched again reaches the hook as a value of type OD_PV_MISSING;
     * placed anywhere else, it fails the parse with OD_ERR_LIMIT (as a memo store out of
     * order does). */
    int forget_absorbed;
    /* Nonzero: the tree keeps the memo, for reading parts of the pickle again
     * (od_pickle_reread). */
    int keep_memo;
} od_pickle_options;

/* Where a dict offered to the absorb hook began, to read the pickle again from there. */
typedef struct {
    uint64_t offset;      /* of its EMPTY_DICT */
    uint64_t memo_index;  /* its memo slot */
    int marked;           /* a MARK lies right below it (its list's items come in batches) */
    int first_in_list;    /* it is the first item of a list still empty */
} od_pickle_position;

/* In the absorb hook: where the dict offered began. 0 when not known (a dict that did not
 * come whole in one step). */
int od_ptree_offer_position(const od_ptree *t, od_pickle_position *pos);

typedef struct od_pickle_reader od_pickle_reader;

/* Read again, from pos (the first item of a list, taken in the absorb hook), the list's
 * items of the pickle that built t, offering each dict to opt->absorb_dict as the first
 * reading did, into t (which must come from a reading with keep_memo and
 * forget_absorbed). in gives the pickle's bytes from pos->offset on; errors name offsets
 * in the pickle. Returns a reader that od_pickle_reader_step runs and the caller frees
 * with od_pickle_reader_free (NULL is fine). OD_ERR_ARG when t cannot be read from pos;
 * OD_ERR_NOMEM. */
od_status od_pickle_reread(od_input *in, od_ptree *t, const od_pickle_position *pos, const od_pickle_options *opt,
                           od_pickle_reader **out, od_error *err);
/* Run until the hook returns OD_ABSORB_PAUSE: OD_OK. Fails as od_pickle_load does, and
 * with OD_ERR_FORMAT when the pickle ends before a pause (err filled). */
od_status od_pickle_reader_step(od_pickle_reader *r, od_error *err);
void od_pickle_reader_free(od_pickle_reader *r);

/* Parse one pickle from in (opt may be NULL). On success *out is the tree; on failure
 * *out is NULL and err names the byte offset (in the uncompressed stream) and what was
 * expected. Fails with OD_ERR_FORMAT, OD_ERR_REFUSED, OD_ERR_LIMIT, OD_ERR_IO,
 * OD_ERR_NOMEM. */
od_status od_pickle_load(od_input *in, const od_pickle_options *opt, od_ptree **out,
                         od_error *err);
void od_ptree_free(od_ptree *t);

/* Bytes of uncompressed input consumed by the parse that built t. */
uint64_t od_ptree_input_bytes(const od_ptree *t);

od_pv od_ptree_root(const od_ptree *t);
od_pv_type od_pv_typeof(const od_ptree *t, od_pv v);
/* A short Python-ish name for a type ("dict", "list", "str", ...). */
const char *od_pv_type_name(od_pv_type type);

/* Scalars. Each returns 1 and fills *out when v holds a value of that kind that fits,
 * else 0. get_i64/get_u64 accept ints (and bools as 0/1); get_f64 accepts floats and
 * ints. */
int od_pv_get_i64(const od_ptree *t, od_pv v, int64_t *out);
int od_pv_get_u64(const od_ptree *t, od_pv v, uint64_t *out);
int od_pv_get_f64(const od_ptree *t, od_pv v, double *out);
int od_pv_get_bool(const od_ptree *t, od_pv v, int *out);
/* str or bytes: NUL-terminated text owned by t, length in *len (may be NULL); NULL for
 * other types. */
const char *od_pv_str(const od_ptree *t, od_pv v, size_t *len);

/* Containers. od_pv_len: items of a list/tuple/set, pairs of a dict, 0 otherwise. */
size_t od_pv_len(const od_ptree *t, od_pv v);
/* Item i of a list/tuple/set, or OD_PV_MISSING_VALUE. */
od_pv od_pv_item(const od_ptree *t, od_pv v, size_t i);
/* All items of a list/tuple/set at once (*n of them; NULL and 0 for other values). The
 * array belongs to t. */
const od_pv *od_pv_items(const od_ptree *t, od_pv v, size_t *n);
/* Pair i of a dict (insertion order). */
od_pv od_pv_dict_key(const od_ptree *t, od_pv v, size_t i);
od_pv od_pv_dict_value(const od_ptree *t, od_pv v, size_t i);
/* dict[key] for a str key (the last pair wins if a key repeats); OD_PV_MISSING_VALUE
 * when absent or v is not a dict. */
od_pv od_pv_dict_gets(const od_ptree *t, od_pv v, const char *key);
/* A stable identity for a container (equal for shared lists), for caches; UINT32_MAX
 * for non-containers. */
uint32_t od_pv_identity(const od_ptree *t, od_pv v);
/* The record number of an OD_PV_RECORD. */
uint32_t od_pv_record(const od_ptree *t, od_pv v);
/* 1 when list v holds records first, first + 1, ..., first + *n - 1 (a list of absorbed
 * dicts in their own order, kept without an item array); 0 otherwise. */
int od_pv_record_run(const od_ptree *t, od_pv v, uint32_t *first, size_t *n);

/* Inline fast paths for the hottest accessors (the tag layout is private to pickle.c
 * otherwise: small ints are tag 0 with a 61-bit payload, interned strings tag 1,
 * containers tag 2 with their slot; a slot id is an identity only while the container
 * lives, which for shared lists and kept dicts is the tree's lifetime). */
static inline int od_pv_is_small_int(od_pv v)
{
    return (v & 7) == 0;
}
static inline int64_t od_pv_small_int(od_pv v)
{
    return ((int64_t)v) >> 3;
}
static inline uint32_t od_pv_cont_index_fast(od_pv v)
{
    return (v & 7) == 2 ? (uint32_t)(v >> 3) : UINT32_MAX;
}
static inline uint32_t od_pv_str_index_fast(od_pv v)
{
    return (v & 7) == 1 ? (uint32_t)(v >> 3) : UINT32_MAX;
}
/* The record number of an absorbed dict in its usual form; UINT32_MAX otherwise (then
 * od_pv_record knows). */
static inline uint32_t od_pv_record_fast(od_pv v)
{
    return (v & 7) == 7 ? (uint32_t)(v >> 3) : UINT32_MAX;
}

#endif
