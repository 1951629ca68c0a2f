/* profile.c - profiler memory records into one model (see profile.h).
 *
 * The Chrome trace is read as a stream of events; only what the analysis needs is kept:
 * per [memory] event 64 bytes, per operator or Python frame 24 bytes plus its interned
 * name. Everything else (kernels, flows, arguments) is skipped as it is read. */
#include "read/profile.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/jsonstream.h"
#include "base/mem.h"
#include "base/u64map.h"
#include "read/pprof.h"

#define HEAD_SIZE 4096
/* Whole-file formats (tables, logs, pprof) are small; a bigger one is not what we think. */
#define MAX_WHOLE (256u << 20)
/* More events than a 32-bit index can name is not a profiler trace we can rank. */
#define MAX_EVENTS 200000000u

static const char *const kind_names[OD_PROFILE_KIND_COUNT] = {
    "torch-trace", "torch-memory-timeline", "torch-key-averages", "jax-memory-profile",
    "jax-memory-stats", "bfc-log",
};
static const char *const cat_names[OD_PCAT_COUNT] = {
    "parameter", "optimizer_state", "input", "temporary", "activation", "gradient",
    "autograd_detail", "unknown",
};
static const char *const phase_names[OD_PHASE_COUNT] = {"other", "forward", "backward", "optimizer"};

const char *od_profile_kind_name(od_profile_kind k)
{
    return (unsigned)k < OD_PROFILE_KIND_COUNT ? kind_names[k] : "unknown";
}

const char *od_profile_category_name(od_profile_category c)
{
    return (unsigned)c < OD_PCAT_COUNT ? cat_names[c] : "unknown";
}

const char *od_phase_name(od_phase p)
{
    return (unsigned)p < OD_PHASE_COUNT ? phase_names[p] : "other";
}

/* ---------- small helpers ---------- */

/* String interner: names of operators and frames, each stored once. */
typedef struct {
    char **names;
    size_t n, cap;
    uint32_t *slots;   /* index + 1; 0 empty */
    size_t nslots;
} interner;

static uint64_t hash_str(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* Returns the id, or UINT32_MAX on allocation failure. */
static uint32_t intern(interner *t, const char *s, size_t n)
{
    if (t->n * 2 >= t->nslots) {
        size_t ns = t->nslots ? t->nslots * 2 : 1024;
        uint32_t *sl = calloc(ns, sizeof *sl);
        if (!sl)
            return UINT32_MAX;
        for (size_t i = 0; i < t->n; i++) {
            size_t k = hash_str(t->names[i], strlen(t->names[i])) & (ns - 1);
            while (sl[k])
                k = (k + 1) & (ns - 1);
            sl[k] = (uint32_t)i + 1;
        }
        free(t->slots);
        t->slots = sl;
        t->nslots = ns;
    }
    size_t k = hash_str(s, n) & (t->nslots - 1);
    while (t->slots[k]) {
        const char *e = t->names[t->slots[k] - 1];
        if (strlen(e) == n && memcmp(e, s, n) == 0)
            return t->slots[k] - 1;
        k = (k + 1) & (t->nslots - 1);
    }
    if (!od_grow((void **)&t->names, &t->cap, t->n + 1, sizeof *t->names))
        return UINT32_MAX;
    char *c = malloc(n + 1);
    if (!c)
        return UINT32_MAX;
    memcpy(c, s, n);
    c[n] = 0;
    t->names[t->n] = c;
    t->slots[k] = (uint32_t)t->n + 1;
    return (uint32_t)t->n++;
}

static void interner_free(interner *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->names[i]);
    free(t->names);
    free(t->slots);
}

/* A ranking under construction: accumulate by id, then sort. */
typedef struct {
    int64_t *bytes;
    uint64_t *count;
    size_t n;
} accum;

static int accum_init(accum *a, size_t n)
{
    a->n = n;
    a->bytes = calloc(n ? n : 1, sizeof *a->bytes);
    a->count = calloc(n ? n : 1, sizeof *a->count);
    return a->bytes && a->count;
}

static void accum_free(accum *a)
{
    free(a->bytes);
    free(a->count);
}

static int cmp_rank(const void *a, const void *b)
{
    const od_profile_rank *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void ranking_free(od_profile_ranking *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i].name);
    free(r->v);
    r->v = NULL;
    r->n = 0;
}

static int ranking_add(od_profile_ranking *r, size_t *cap, const char *name, int64_t bytes, uint64_t count)
{
    if (!od_grow((void **)&r->v, cap, r->n + 1, sizeof *r->v))
        return 0;
    char *c = strdup(name);
    if (!c)
        return 0;
    r->v[r->n].name = c;
    r->v[r->n].bytes = bytes;
    r->v[r->n].count = count;
    r->n++;
    return 1;
}

/* Turn an accumulator into a sorted ranking; entries with no count are left out. */
static int accum_to_ranking(const accum *a, const char *const *names, const char *none_name,
                            od_profile_ranking *out)
{
    size_t cap = 0;
    for (size_t i = 0; i < a->n; i++) {
        if (!a->count[i])
            continue;
        const char *nm = (i + 1 == a->n && none_name) ? none_name : names[i];
        if (!ranking_add(out, &cap, nm, a->bytes[i], a->count[i]))
            return 0;
    }
    od_sort(out->v, out->n, sizeof *out->v, cmp_rank);
    return 1;
}

static int starts_with(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* Library code, by the path of a Python frame: the user's own lines are what a ranking of
 * source lines should name. Paths in traces are relative to sys.path entries (torch strips
 * them), so installed packages appear as "torch/...", stdlib modules as "typing.py". */
static int library_path(const char *path, size_t n)
{
    static const char *const pkgs[] = {
        "torch/", "transformers/", "accelerate/", "peft/", "deepspeed/", "jax/", "jaxlib/",
        "flax/", "optax/", "numpy/", "triton/", "apex/", "xformers/", "flash_attn/",
        "bitsandbytes/", "datasets/", "tokenizers/", "safetensors/", "huggingface_hub/",
        "lightning/", "pytorch_lightning/", "torchvision/", "torchaudio/", "einops/",
        "megatron/", "trl/", "haiku/", "equinox/", "importlib/", "collections/",
        "concurrent/", "multiprocessing/", "json/", "logging/", "unittest/", "asyncio/",
    };
    static const char *const stdlib[] = {
        "typing.py", "dataclasses.py", "contextlib.py", "functools.py", "abc.py", "enum.py",
        "threading.py", "copy.py", "inspect.py", "os.py", "re.py", "warnings.py", "weakref.py",
        "posixpath.py", "genericpath.py", "_collections_abc.py", "traceback.py", "linecache.py",
        "tokenize.py", "codecs.py", "random.py", "queue.py", "selectors.py", "socket.py",
    };
    if (n == 0 || path[0] == '<')
        return 1;
    char tmp[512];
    if (n >= sizeof tmp)
        n = sizeof tmp - 1;
    memcpy(tmp, path, n);
    tmp[n] = 0;
    if (strstr(tmp, "site-packages/") || strstr(tmp, "dist-packages/") || strstr(tmp, "/lib/python") ||
        strstr(tmp, "/_src/"))
        return 1;
    for (size_t i = 0; i < sizeof pkgs / sizeof *pkgs; i++)
        if (strncmp(tmp, pkgs[i], strlen(pkgs[i])) == 0)
            return 1;
    for (size_t i = 0; i < sizeof stdlib / sizeof *stdlib; i++)
        if (strcmp(tmp, stdlib[i]) == 0)
            return 1;
    return 0;
}

/* Python events as torch names them: "path(line): function" for frames ("<built-in
 * ...>" for C functions), "nn.Module: Linear_0" for module scopes. */
enum { FR_OTHER, FR_MODULE, FR_LIBRARY, FR_USER };

static uint8_t frame_type(const char *name)
{
    if (starts_with(name, "nn.Module: "))
        return FR_MODULE;
    if (name[0] == '<')
        return FR_OTHER;
    const char *paren = strchr(name, '(');
    if (!paren || paren == name || !isdigit((unsigned char)paren[1]))
        return FR_OTHER;
    return library_path(name, (size_t)(paren - name)) ? FR_LIBRARY : FR_USER;
}

/* ---------- PyTorch Chrome trace ---------- */

enum { OPK_OP, OPK_PY };

typedef struct {
    int64_t start, end;     /* nanoseconds */
    uint64_t tid;
    uint32_t name;
    uint8_t kind;
} op_rec;

typedef struct {
    int64_t ts;             /* nanoseconds */
    int64_t bytes;
    uint64_t total_alloc, total_res, addr;
    uint64_t tid;
    int64_t dev, dev_type;
    uint32_t seq;
    uint32_t op, src, mod;  /* attribution: name ids, UINT32_MAX none */
} mem_rec;

typedef struct {
    interner names;
    op_rec *ops;
    size_t n_ops, cap_ops;
    mem_rec *mem;
    size_t n_mem, cap_mem;
    size_t n_frames;
    char *scratch;
    size_t scratch_cap;
} trace_state;

static uint64_t tid_key(const char *s, size_t n)
{
    return hash_str(s, n) | (1ULL << 63);
}

/* Read pid/tid: a number, or a string hashed into its own key space. */
static od_status read_id(od_js *js, uint64_t *out, od_error *err)
{
    od_js_kind k = od_js_peek(js);
    if (k == OD_JS_NUMBER) {
        od_js_number n;
        od_status st = od_js_number_read(js, &n, err);
        if (st)
            return st;
        *out = (uint64_t)n.i & ~(1ULL << 63);
        return OD_OK;
    }
    if (k == OD_JS_STRING) {
        const char *s;
        size_t n;
        od_status st = od_js_string(js, &s, &n, err);
        if (st)
            return st;
        *out = tid_key(s, n);
        return OD_OK;
    }
    return od_js_skip(js, err);
}

static od_status read_int_field(od_js *js, int64_t *out, int *have, od_error *err)
{
    uint64_t at = od_js_offset(js);
    od_js_kind k = od_js_peek(js);
    if (k == OD_JS_NULL)
        return od_js_skip(js, err);
    if (k != OD_JS_NUMBER)
        return k == OD_JS_BAD ? od_js_skip(js, err)
                              : od_fail_at(err, OD_ERR_FORMAT, at, "expected an integer in the event's args");
    od_js_number n;
    at = od_js_offset(js);
    od_status st = od_js_number_read(js, &n, err);
    if (st)
        return st;
    if (!n.is_int)
        return od_fail_at(err, OD_ERR_FORMAT, at, "expected an integer in a [memory] event");
    *out = n.i;
    *have = 1;
    return OD_OK;
}

static od_status read_time(od_js *js, int64_t *out, int *have, od_error *err)
{
    if (od_js_peek(js) != OD_JS_NUMBER)
        return od_js_skip(js, err);
    od_js_number n;
    uint64_t at = od_js_offset(js);
    od_status st = od_js_number_read(js, &n, err);
    if (st)
        return st;
    if (!n.milli_ok)
        return od_fail_at(err, OD_ERR_FORMAT, at, "timestamp out of range");
    *out = n.milli;
    *have = 1;
    return OD_OK;
}

/* One element of traceEvents. */
static od_status trace_event(od_js *js, trace_state *t, od_error *err)
{
    uint64_t at = od_js_offset(js);
    if (od_js_peek(js) != OD_JS_OBJECT)
        return od_js_skip(js, err);
    od_status st = od_js_begin_object(js, err);
    if (st)
        return st;
    char ph = 0;
    int cat = 0; /* 1 cpu_op/user_annotation, 2 python_function, 3 instant */
    int is_memory = 0, have_name = 0, have_ts = 0, have_dur = 0;
    size_t name_len = 0;
    int64_t ts = 0, dur = 0;
    uint64_t tid = 0;
    int64_t a_total = 0, a_res = 0, a_bytes = 0, a_addr = 0, a_dev = -1, a_devtype = 1;
    int h_total = 0, h_res = 0, h_bytes = 0, h_addr = 0, h_dev = 0, h_devtype = 0; /* present */
    const char *key;
    size_t klen;
    int r;
    while ((r = od_js_next_key(js, &key, &klen, err)) > 0) {
        if (klen == 2 && !memcmp(key, "ph", 2) && od_js_peek(js) == OD_JS_STRING) {
            const char *s;
            if ((st = od_js_string(js, &s, NULL, err)))
                return st;
            ph = s[0];
        } else if (klen == 3 && !memcmp(key, "cat", 3) && od_js_peek(js) == OD_JS_STRING) {
            const char *s;
            if ((st = od_js_string(js, &s, NULL, err)))
                return st;
            cat = !strcmp(s, "cpu_op") || !strcmp(s, "user_annotation") ? 1
                : !strcmp(s, "python_function") ? 2
                : !strcmp(s, "cpu_instant_event") ? 3 : 0;
        } else if (klen == 4 && !memcmp(key, "name", 4) && od_js_peek(js) == OD_JS_STRING) {
            const char *s;
            size_t n;
            if ((st = od_js_string(js, &s, &n, err)))
                return st;
            if (n + 1 > t->scratch_cap) {
                char *ns = realloc(t->scratch, n + 1);
                if (!ns)
                    return od_fail(err, OD_ERR_NOMEM, "out of memory");
                t->scratch = ns;
                t->scratch_cap = n + 1;
            }
            memcpy(t->scratch, s, n + 1);
            name_len = n;
            have_name = 1;
            is_memory = n == 8 && !memcmp(s, "[memory]", 8);
        } else if (klen == 3 && !memcmp(key, "tid", 3)) {
            if ((st = read_id(js, &tid, err)))
                return st;
        } else if (klen == 2 && !memcmp(key, "ts", 2)) {
            if ((st = read_time(js, &ts, &have_ts, err)))
                return st;
        } else if (klen == 3 && !memcmp(key, "dur", 3)) {
            if ((st = read_time(js, &dur, &have_dur, err)))
                return st;
        } else if (klen == 4 && !memcmp(key, "args", 4) && od_js_peek(js) == OD_JS_OBJECT) {
            if ((st = od_js_begin_object(js, err)))
                return st;
            const char *ak;
            size_t aklen;
            int ar;
            while ((ar = od_js_next_key(js, &ak, &aklen, err)) > 0) {
                if (!strcmp(ak, "Total Allocated"))
                    st = read_int_field(js, &a_total, &h_total, err);
                else if (!strcmp(ak, "Total Reserved"))
                    st = read_int_field(js, &a_res, &h_res, err);
                else if (!strcmp(ak, "Bytes"))
                    st = read_int_field(js, &a_bytes, &h_bytes, err);
                else if (!strcmp(ak, "Addr"))
                    st = read_int_field(js, &a_addr, &h_addr, err);
                else if (!strcmp(ak, "Device Id"))
                    st = read_int_field(js, &a_dev, &h_dev, err);
                else if (!strcmp(ak, "Device Type"))
                    st = read_int_field(js, &a_devtype, &h_devtype, err);
                else
                    st = od_js_skip(js, err);
                if (st)
                    return st;
            }
            if (ar < 0)
                return err->status;
        } else {
            if ((st = od_js_skip(js, err)))
                return st;
        }
    }
    if (r < 0)
        return err->status;
    if (is_memory) {
        if (!have_ts || !h_total || !h_bytes)
            return od_fail_at(err, OD_ERR_FORMAT, at,
                              "a [memory] event without ts, Bytes or Total Allocated");
        if (a_total < 0 || a_res < 0)
            return od_fail_at(err, OD_ERR_FORMAT, at, "negative Total Allocated or Total Reserved");
        if (t->n_mem >= MAX_EVENTS)
            return od_fail_at(err, OD_ERR_LIMIT, at, "more than %u [memory] events", MAX_EVENTS);
        if (!od_grow((void **)&t->mem, &t->cap_mem, t->n_mem + 1, sizeof *t->mem))
            return od_fail(err, OD_ERR_NOMEM, "out of memory");
        mem_rec *m = &t->mem[t->n_mem];
        m->ts = ts;
        m->bytes = a_bytes;
        m->total_alloc = (uint64_t)a_total;
        m->total_res = (uint64_t)a_res;
        m->addr = (uint64_t)a_addr;
        m->tid = tid;
        m->dev = h_dev ? a_dev : 0;
        /* Device Type 0 is the CPU (c10::DeviceType::CPU); older traces lack the field
         * and mark CPU memory with Device Id -1. */
        m->dev_type = h_devtype ? a_devtype : (m->dev < 0 ? 0 : 1);
        m->seq = (uint32_t)t->n_mem;
        m->op = m->src = m->mod = UINT32_MAX;
        t->n_mem++;
        return OD_OK;
    }
    if (ph == 'X' && (cat == 1 || cat == 2) && have_name && have_ts) {
        if (!have_dur || dur < 0)
            dur = 0;
        if (t->n_ops >= MAX_EVENTS)
            return od_fail_at(err, OD_ERR_LIMIT, at, "more than %u operator events", MAX_EVENTS);
        if (!od_grow((void **)&t->ops, &t->cap_ops, t->n_ops + 1, sizeof *t->ops))
            return od_fail(err, OD_ERR_NOMEM, "out of memory");
        uint32_t id = intern(&t->names, t->scratch, name_len);
        if (id == UINT32_MAX)
            return od_fail(err, OD_ERR_NOMEM, "out of memory");
        op_rec *o = &t->ops[t->n_ops++];
        o->start = ts;
        o->end = ts > INT64_MAX - dur ? INT64_MAX : ts + dur;
        o->tid = tid;
        o->name = id;
        o->kind = cat == 2 ? OPK_PY : OPK_OP;
        if (cat == 2)
            t->n_frames++;
    }
    return OD_OK;
}

static int cmp_ops(const void *a, const void *b)
{
    const op_rec *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;   /* outer first */
    return 0;
}

static int cmp_mem_tid(const void *a, const void *b)
{
    const mem_rec *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_mem_time(const void *a, const void *b)
{
    const mem_rec *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Attribute each memory event to the innermost enclosing operator and the innermost user
 * Python frame on its thread: one sweep per thread with a stack of open intervals. */
static int attribute(trace_state *t, const uint8_t *user)
{
    od_sort(t->ops, t->n_ops, sizeof *t->ops, cmp_ops);
    od_sort(t->mem, t->n_mem, sizeof *t->mem, cmp_mem_tid);
    size_t cap = 64;
    const op_rec **opst = malloc(cap * sizeof *opst), **pyst = malloc(cap * sizeof *pyst);
    if (!opst || !pyst) {
        free(opst);
        free(pyst);
        return 0;
    }
    size_t j = 0, i = 0;
    while (i < t->n_mem) {
        uint64_t tid = t->mem[i].tid;
        while (j < t->n_ops && t->ops[j].tid < tid)
            j++;
        size_t nop = 0, npy = 0;
        for (; i < t->n_mem && t->mem[i].tid == tid; i++) {
            mem_rec *m = &t->mem[i];
            while (j < t->n_ops && t->ops[j].tid == tid && t->ops[j].start <= m->ts) {
                const op_rec *o = &t->ops[j++];
                const op_rec **st = o->kind == OPK_PY ? pyst : opst;
                size_t *n = o->kind == OPK_PY ? &npy : &nop;
                while (*n && st[*n - 1]->end < o->start)
                    (*n)--;
                if (*n == cap) {
                    size_t nc = cap * 2;
                    const op_rec **a = realloc(opst, nc * sizeof *a);
                    if (a)
                        opst = a;
                    const op_rec **b = realloc(pyst, nc * sizeof *b);
                    if (b)
                        pyst = b;
                    if (!a || !b) {
                        free(opst);
                        free(pyst);
                        return 0;
                    }
                    cap = nc;
                    st = o->kind == OPK_PY ? pyst : opst;
                }
                st[(*n)++] = o;
            }
            while (nop && opst[nop - 1]->end < m->ts)
                nop--;
            while (npy && pyst[npy - 1]->end < m->ts)
                npy--;
            /* A popped interval can hide an enclosing one below it that ended earlier
             * than an inner one (improperly nested events): search down for a cover. */
            for (size_t k = nop; k-- > 0;)
                if (opst[k]->start <= m->ts && opst[k]->end >= m->ts) {
                    m->op = opst[k]->name;
                    break;
                }
            uint32_t lib = UINT32_MAX;
            for (size_t k = npy; k-- > 0;) {
                const op_rec *f = pyst[k];
                if (f->start > m->ts || f->end < m->ts)
                    continue;
                uint8_t ty = user[f->name];
                if (ty == FR_MODULE && m->mod == UINT32_MAX)
                    m->mod = f->name;
                if (ty == FR_USER && m->src == UINT32_MAX)
                    m->src = f->name;
                if (ty == FR_LIBRARY && lib == UINT32_MAX)
                    lib = f->name;
                if (m->src != UINT32_MAX && m->mod != UINT32_MAX)
                    break;
            }
            if (m->src == UINT32_MAX)
                m->src = lib;
        }
        while (j < t->n_ops && t->ops[j].tid == tid)
            j++;
    }
    free(opst);
    free(pyst);
    return 1;
}

typedef struct {
    int64_t start, end;
    od_phase phase;
} run;

static int cmp_run(const void *a, const void *b)
{
    const run *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Phases from operator names: autograd's evaluate_function marks backward work,
 * Optimizer.step#... the optimizer (torch.optim's profiling hook names it so); what runs
 * before a backward stretch, since the last step, is forward. */
static int phases(od_profile *p, const trace_state *t, int64_t t0, int64_t t1)
{
    run *runs = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < t->n_ops; i++) {
        const op_rec *o = &t->ops[i];
        if (o->kind != OPK_OP)
            continue;
        const char *nm = t->names.names[o->name];
        od_phase ph = starts_with(nm, "autograd::engine::evaluate_function: ") ? OD_PHASE_BACKWARD
                    : starts_with(nm, "Optimizer.step#") ? OD_PHASE_OPTIMIZER : OD_PHASE_OTHER;
        if (ph == OD_PHASE_OTHER)
            continue;
        if (!od_grow((void **)&runs, &cap, n + 1, sizeof *runs)) {
            free(runs);
            return 0;
        }
        runs[n].start = o->start;
        runs[n].end = o->end;
        runs[n].phase = ph;
        n++;
    }
    if (n == 0) {
        free(runs);
        return 1;
    }
    od_sort(runs, n, sizeof *runs, cmp_run);
    /* Merge consecutive runs of the same phase (backward ops back to back, nested steps). */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && runs[m - 1].phase == runs[i].phase) {
            if (runs[i].end > runs[m - 1].end)
                runs[m - 1].end = runs[i].end;
            continue;
        }
        if (m && runs[i].start < runs[m - 1].end)
            runs[i].start = runs[m - 1].end;   /* overlap: the later phase starts after */
        if (runs[i].end < runs[i].start)
            runs[i].end = runs[i].start;
        runs[m++] = runs[i];
    }
    size_t scap = 0;
    int64_t prev = t0;
    for (size_t i = 0; i <= m; i++) {
        int64_t s = i < m ? runs[i].start : t1;
        if (s > t1)
            s = t1;
        if (s > prev) {
            od_phase gap = i < m && runs[i].phase == OD_PHASE_BACKWARD ? OD_PHASE_FORWARD : OD_PHASE_OTHER;
            if (!od_grow((void **)&p->spans, &scap, p->n_spans + 1, sizeof *p->spans)) {
                free(runs);
                return 0;
            }
            p->spans[p->n_spans++] = (od_profile_span){gap, (double)(prev - t0) / 1000.0, (double)(s - t0) / 1000.0, 0};
            prev = s;
        }
        if (i == m)
            break;
        int64_t a = runs[i].start < prev ? prev : runs[i].start;
        int64_t b = runs[i].end > t1 ? t1 : runs[i].end;
        if (b > a) {
            if (!od_grow((void **)&p->spans, &scap, p->n_spans + 1, sizeof *p->spans)) {
                free(runs);
                return 0;
            }
            p->spans[p->n_spans++] = (od_profile_span){runs[i].phase, (double)(a - t0) / 1000.0, (double)(b - t0) / 1000.0, 0};
            prev = b;
        }
    }
    free(runs);
    /* Peak allocated per span, and the phase at the peak. */
    size_t k = 0;
    for (size_t i = 0; i < p->n_points; i++) {
        double x = p->time_us[i];
        while (k + 1 < p->n_spans && x >= p->spans[k].end_us)
            k++;
        if (k < p->n_spans && x >= p->spans[k].start_us && p->allocated_bytes[i] > p->spans[k].peak_allocated_bytes)
            p->spans[k].peak_allocated_bytes = p->allocated_bytes[i];
    }
    /* Steps: each optimizer span closes one. */
    size_t nst = 0;
    for (size_t i = 0; i < p->n_spans; i++)
        nst += p->spans[i].phase == OD_PHASE_OPTIMIZER;
    if (nst) {
        p->steps = calloc(nst, sizeof *p->steps);
        if (!p->steps)
            return 0;
        size_t pt = 0;
        for (size_t i = 0; i < p->n_spans; i++) {
            if (p->spans[i].phase != OD_PHASE_OPTIMIZER)
                continue;
            od_profile_step *st = &p->steps[p->n_steps++];
            st->end_us = p->spans[i].end_us;
            while (pt < p->n_points && p->time_us[pt] <= st->end_us) {
                if (p->allocated_bytes[pt] > st->peak_allocated_bytes)
                    st->peak_allocated_bytes = p->allocated_bytes[pt];
                st->allocated_bytes = p->allocated_bytes[pt];
                st->reserved_bytes = p->reserved_bytes ? p->reserved_bytes[pt] : 0;
                pt++;
            }
            if (pt == 0 || p->time_us[pt - 1] > st->end_us) {
                st->allocated_bytes = p->n_points ? p->allocated_bytes[0] : 0;
            }
        }
    }
    for (size_t i = 0; i < p->n_spans; i++)
        if (p->peak_time_us >= p->spans[i].start_us &&
            (p->peak_time_us < p->spans[i].end_us || i + 1 == p->n_spans))
            p->peak_phase = p->spans[i].phase;
    return 1;
}

static od_status trace_finish(od_profile *p, trace_state *t, od_error *err)
{
    /* The device whose timeline we show: the GPU with the highest Total Allocated. */
    int64_t dev = -1;
    uint64_t best = 0;
    int any = 0;
    for (size_t i = 0; i < t->n_mem; i++) {
        const mem_rec *m = &t->mem[i];
        if (m->dev_type == 0 || m->dev < 0)
            continue;
        if (!any || m->total_alloc > best || (m->total_alloc == best && m->dev < dev)) {
            best = m->total_alloc;
            dev = m->dev;
            any = 1;
        }
    }
    p->device = (int)dev;
    p->n_ops = 0;
    for (size_t i = 0; i < t->n_ops; i++)
        p->n_ops += t->ops[i].kind == OPK_OP;
    p->n_frames = t->n_frames;
    p->with_stack = t->n_frames > 0;
    if (!any)
        return OD_OK;   /* no GPU memory events: nothing to report, not an error */
    /* Keep the chosen device's events only. */
    size_t w = 0;
    for (size_t i = 0; i < t->n_mem; i++)
        if (t->mem[i].dev == dev && t->mem[i].dev_type != 0)
            t->mem[w++] = t->mem[i];
    t->n_mem = w;
    p->n_memory_events = w;

    uint8_t *user = calloc(t->names.n ? t->names.n : 1, 1);
    if (!user)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < t->names.n; i++)
        user[i] = frame_type(t->names.names[i]);
    int ok = attribute(t, user);
    free(user);
    if (!ok)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");

    /* Timeline in time order. */
    od_sort(t->mem, t->n_mem, sizeof *t->mem, cmp_mem_time);
    size_t n = t->n_mem;
    p->n_points = n;
    p->time_us = malloc(n * sizeof *p->time_us);
    p->allocated_bytes = malloc(n * sizeof *p->allocated_bytes);
    p->reserved_bytes = malloc(n * sizeof *p->reserved_bytes);
    if (!p->time_us || !p->allocated_bytes || !p->reserved_bytes)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    int64_t t0 = t->mem[0].ts;
    p->origin_us = (double)t0 / 1000.0;
    for (size_t i = 0; i < n; i++) {
        p->time_us[i] = (double)(t->mem[i].ts - t0) / 1000.0;
        p->allocated_bytes[i] = t->mem[i].total_alloc;
        p->reserved_bytes[i] = t->mem[i].total_res;
        if (t->mem[i].total_alloc > p->peak_allocated_bytes || i == 0) {
            p->peak_allocated_bytes = t->mem[i].total_alloc;
            p->peak_index = i;
        }
        if (t->mem[i].total_res > p->peak_reserved_bytes)
            p->peak_reserved_bytes = t->mem[i].total_res;
    }
    p->peak_time_us = p->time_us[p->peak_index];

    /* Live allocations at the peak: replay alloc/free by address up to the peak. */
    size_t nn = t->names.n + 1;   /* last slot: no operator / no frame */
    accum ops_peak, src_peak, mod_peak, ops_self;
    int okacc = accum_init(&ops_peak, nn) & accum_init(&src_peak, nn) & accum_init(&mod_peak, nn) &
                accum_init(&ops_self, nn);
    uint8_t *alive = calloc(n, 1);
    od_u64map live = {0};
    od_status st = OD_OK;
    if (!okacc || !alive) {
        st = od_fail(err, OD_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i <= p->peak_index; i++) {
        const mem_rec *m = &t->mem[i];
        uint32_t prev;
        if (m->bytes > 0) {
            if (od_u64map_get(&live, m->addr, &prev))
                alive[prev] = 0;   /* freed without an event: the newer block wins */
            if (!od_u64map_put(&live, m->addr, (uint32_t)i)) {
                st = od_fail(err, OD_ERR_NOMEM, "out of memory");
                goto done;
            }
            alive[i] = 1;
        } else if (m->bytes < 0 && od_u64map_get(&live, m->addr, &prev)) {
            alive[prev] = 0;
            od_u64map_del(&live, m->addr);
        }
    }
    for (size_t i = 0; i <= p->peak_index; i++) {
        if (!alive[i])
            continue;
        const mem_rec *m = &t->mem[i];
        size_t o = m->op == UINT32_MAX ? nn - 1 : m->op;
        size_t s = m->src == UINT32_MAX ? nn - 1 : m->src;
        ops_peak.bytes[o] += m->bytes;
        ops_peak.count[o]++;
        src_peak.bytes[s] += m->bytes;
        src_peak.count[s]++;
        size_t md = m->mod == UINT32_MAX ? nn - 1 : m->mod;
        mod_peak.bytes[md] += m->bytes;
        mod_peak.count[md]++;
        p->peak_tracked_bytes += (uint64_t)m->bytes;
    }
    p->peak_untracked_bytes = p->peak_allocated_bytes > p->peak_tracked_bytes
                                  ? p->peak_allocated_bytes - p->peak_tracked_bytes : 0;
    /* Self memory per operator over the whole trace, as key_averages() counts it: the
     * signed Bytes of the events directly inside the operator. */
    for (size_t i = 0; i < n; i++) {
        const mem_rec *m = &t->mem[i];
        if (m->op == UINT32_MAX)
            continue;
        ops_self.bytes[m->op] += m->bytes;
        ops_self.count[m->op] += m->bytes > 0;
    }
    /* An operator that only freed still belongs in the ranking. */
    for (size_t i = 0; i < n; i++)
        if (t->mem[i].op != UINT32_MAX && !ops_self.count[t->mem[i].op] && ops_self.bytes[t->mem[i].op])
            ops_self.count[t->mem[i].op] = 1;
    if (!accum_to_ranking(&ops_peak, (const char *const *)t->names.names, "(outside any operator)", &p->ops_at_peak) ||
        !accum_to_ranking(&src_peak, (const char *const *)t->names.names, "(no Python frame)", &p->sources_at_peak) ||
        !accum_to_ranking(&mod_peak, (const char *const *)t->names.names, "(outside any nn.Module)", &p->modules_at_peak) ||
        !accum_to_ranking(&ops_self, (const char *const *)t->names.names, NULL, &p->ops_self)) {
        st = od_fail(err, OD_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (!phases(p, t, t0, t->mem[n - 1].ts))
        st = od_fail(err, OD_ERR_NOMEM, "out of memory");
done:
    od_u64map_free(&live);
    free(alive);
    accum_free(&ops_peak);
    accum_free(&src_peak);
    accum_free(&mod_peak);
    accum_free(&ops_self);
    return st;
}

/* ---------- JAX memory_stats() ---------- */

/* The one list of the keys JAX's memory_stats() carries (XLA's stream executor
 * AllocatorStats), for this reader and the triage's (od_jax_stats_set). */
static int stats_field(od_profile_stats *s, const char *k, uint64_t **v, int **h)
{
#define RETURN_IF_FIELD(name) \
    if (!strcmp(k, #name)) { *v = &s->name; *h = &s->has_##name; return 1; }
    RETURN_IF_FIELD(bytes_in_use) RETURN_IF_FIELD(peak_bytes_in_use)
    RETURN_IF_FIELD(largest_free_block_bytes) RETURN_IF_FIELD(bytes_limit)
    RETURN_IF_FIELD(bytes_reserved) RETURN_IF_FIELD(peak_bytes_reserved)
    RETURN_IF_FIELD(pool_bytes) RETURN_IF_FIELD(peak_pool_bytes)
    RETURN_IF_FIELD(num_allocs) RETURN_IF_FIELD(largest_alloc_size)
#undef RETURN_IF_FIELD
    return 0;
}

int od_jax_stats_set(od_profile_stats *s, const char *key, uint64_t value)
{
    uint64_t *v;
    int *h;
    if (!stats_field(s, key, &v, &h))
        return 0;
    *v = value;
    *h = 1;
    return 1;
}

static od_status stats_value(od_js *js, od_profile_stats *s, const char *k, int *seen, od_error *err)
{
    uint64_t *v;
    int *h;
    if (!stats_field(s, k, &v, &h) || od_js_peek(js) != OD_JS_NUMBER)
        return od_js_skip(js, err);
    uint64_t at = od_js_offset(js);
    od_js_number n;
    od_status st = od_js_number_read(js, &n, err);
    if (st)
        return st;
    if (!n.is_int || n.i < 0)
        return od_fail_at(err, OD_ERR_FORMAT, at, "expected a non-negative integer for %s", k);
    *v = (uint64_t)n.i;
    *h = 1;
    *seen = 1;
    return OD_OK;
}

static od_status stats_object(od_js *js, od_profile_stats *s, int *seen, od_error *err)
{
    od_status st = od_js_begin_object(js, err);
    if (st)
        return st;
    const char *k;
    size_t kl;
    int r;
    while ((r = od_js_next_key(js, &k, &kl, err)) > 0) {
        char key[64];
        snprintf(key, sizeof key, "%s", k);
        if ((st = stats_value(js, s, key, seen, err)))
            return st;
    }
    return r < 0 ? err->status : OD_OK;
}

/* ---------- JSON documents: trace or memory_stats (objects), timeline (array) ---------- */

static od_status load_json_object(od_js *js, od_profile *p, od_error *err)
{
    trace_state t = {0};
    od_status st = od_js_begin_object(js, err);
    int have_events = 0, seen_stats = 0, have_base = 0;
    int64_t base_ns = 0;
    const char *k;
    size_t kl;
    int r = 0;
    while (!st && (r = od_js_next_key(js, &k, &kl, err)) > 0) {
        if (!strcmp(k, "traceEvents")) {
            uint64_t at = od_js_offset(js);
            if (od_js_peek(js) != OD_JS_ARRAY) {
                st = od_fail_at(err, OD_ERR_FORMAT, at, "traceEvents must be an array");
                break;
            }
            have_events = 1;
            st = od_js_begin_array(js, err);
            int er;
            while (!st && (er = od_js_next_element(js, err)) > 0)
                st = trace_event(js, &t, err);
            if (!st && er < 0)
                st = err->status;
        } else if (!strcmp(k, "baseTimeNanoseconds") && od_js_peek(js) == OD_JS_NUMBER) {
            od_js_number n;
            st = od_js_number_read(js, &n, err);
            if (!st && n.is_int && n.i >= 0) {
                base_ns = n.i;
                have_base = 1;
            }
        } else if (!strcmp(k, "memory_stats") && od_js_peek(js) == OD_JS_OBJECT) {
            st = stats_object(js, &p->stats, &seen_stats, err);
        } else {
            char key[64];
            snprintf(key, sizeof key, "%s", k);
            st = stats_value(js, &p->stats, key, &seen_stats, err);
        }
    }
    if (!st && r < 0)
        st = err->status;
    if (!st)
        st = od_js_end(js, err);
    if (!st) {
        if (have_events) {
            p->kind = OD_PROFILE_TORCH_TRACE;
            memset(&p->stats, 0, sizeof p->stats);
            st = trace_finish(p, &t, err);
            if (!st && have_base && p->n_points) {
                /* trace ts are microseconds after baseTimeNanoseconds */
                p->has_epoch = 1;
                p->origin_epoch_us = p->origin_us + (double)(base_ns / 1000);
            }
        } else if (seen_stats) {
            p->kind = OD_PROFILE_JAX_STATS;
        } else {
            st = od_fail_at(err, OD_ERR_FORMAT, 0,
                            "JSON object with neither traceEvents (a profiler trace) nor memory_stats figures");
        }
    }
    interner_free(&t.names);
    free(t.ops);
    free(t.mem);
    free(t.scratch);
    return st;
}

/* export_memory_timeline: [times, sizes]; each sizes row is [pad, 8 categories]. */
static od_status load_timeline(od_js *js, od_profile *p, od_error *err)
{
    size_t cap_t = 0, n_t = 0, n_r = 0;
    int64_t *times = NULL;
    od_status st = od_js_begin_array(js, err);
    if (!st)
        st = od_js_next_element(js, err) > 0 ? od_js_begin_array(js, err) : (err->status ? err->status : od_fail_at(err, OD_ERR_FORMAT, od_js_offset(js), "expected [times, sizes]"));
    int r = 0;
    while (!st && (r = od_js_next_element(js, err)) > 0) {
        uint64_t at = od_js_offset(js);
        od_js_number n;
        if ((st = od_js_number_read(js, &n, err)))
            break;
        if (!n.is_int) {
            st = od_fail_at(err, OD_ERR_FORMAT, at, "expected an integer time in microseconds");
            break;
        }
        if (n_t >= MAX_EVENTS) {
            st = od_fail_at(err, OD_ERR_LIMIT, at, "more than %u timeline points", MAX_EVENTS);
            break;
        }
        if (!od_grow((void **)&times, &cap_t, n_t + 1, sizeof *times)) {
            st = od_fail(err, OD_ERR_NOMEM, "out of memory");
            break;
        }
        times[n_t++] = n.i;
    }
    if (!st && r < 0)
        st = err->status;
    if (!st) {
        r = od_js_next_element(js, err);
        if (r < 0)
            st = err->status;
        else if (r == 0)
            st = od_fail_at(err, OD_ERR_FORMAT, od_js_offset(js), "expected the sizes array after the times");
        else
            st = od_js_begin_array(js, err);
    }
    while (!st && (r = od_js_next_element(js, err)) > 0) {
        uint64_t at = od_js_offset(js);
        if (n_r >= n_t) {
            st = od_fail_at(err, OD_ERR_FORMAT, at, "more sizes rows than times");
            break;
        }
        if ((st = od_js_begin_array(js, err)))
            break;
        if (n_r == 0) {
            for (int c = 0; c < OD_PCAT_COUNT; c++)
                if (!(p->category_bytes[c] = calloc(n_t ? n_t : 1, sizeof(uint64_t)))) {
                    st = od_fail(err, OD_ERR_NOMEM, "out of memory");
                    break;
                }
            if (st)
                break;
        }
        int col = 0, cr;
        while (!st && (cr = od_js_next_element(js, err)) > 0) {
            uint64_t vat = od_js_offset(js);
            od_js_number n;
            if ((st = od_js_number_read(js, &n, err)))
                break;
            if (!n.is_int) {
                st = od_fail_at(err, OD_ERR_FORMAT, vat, "expected an integer byte count");
                break;
            }
            if (col >= 1 + OD_PCAT_COUNT) {
                st = od_fail_at(err, OD_ERR_FORMAT, vat, "sizes row has more than %d columns (expected torch's 9)", 1 + OD_PCAT_COUNT);
                break;
            }
            /* Column 0 is padding in torch's layout; a category can dip below zero
             * between a version bump's -/+ pair: clamp for the plot. */
            if (col >= 1)
                p->category_bytes[col - 1][n_r] = n.i > 0 ? (uint64_t)n.i : 0;
            col++;
        }
        if (!st && cr < 0)
            st = err->status;
        if (!st && col != 1 + OD_PCAT_COUNT)
            st = od_fail_at(err, OD_ERR_FORMAT, at, "sizes row has %d columns (expected torch's 9: padding and 8 categories)", col);
        n_r++;
    }
    if (!st && r < 0)
        st = err->status;
    if (!st && (r = od_js_next_element(js, err)) != 0)
        st = r < 0 ? err->status : od_fail_at(err, OD_ERR_FORMAT, od_js_offset(js), "expected ']' after [times, sizes]");
    if (!st)
        st = od_js_end(js, err);
    if (!st && n_r != n_t)
        st = od_fail_at(err, OD_ERR_FORMAT, od_js_offset(js), "%zu times but %zu sizes rows", n_t, n_r);
    if (!st) {
        p->kind = OD_PROFILE_TORCH_TIMELINE;
        p->device = -1;
        p->n_points = n_t;
        if (n_t) {
            p->time_us = malloc(n_t * sizeof *p->time_us);
            p->allocated_bytes = malloc(n_t * sizeof *p->allocated_bytes);
            if (!p->time_us || !p->allocated_bytes)
                st = od_fail(err, OD_ERR_NOMEM, "out of memory");
        }
        for (size_t i = 0; !st && i < n_t; i++) {
            p->time_us[i] = (double)(times[i] - times[0]);
            uint64_t sum = 0;
            for (int c = 0; c < OD_PCAT_COUNT; c++)
                sum += p->category_bytes[c][i];
            p->allocated_bytes[i] = sum;
            if (i == 0 || sum > p->peak_allocated_bytes) {
                p->peak_allocated_bytes = sum;
                p->peak_index = i;
            }
        }
        if (!st && n_t) {
            p->origin_us = (double)times[0];
            /* torch writes these times in epoch microseconds ("to match trace events") */
            p->has_epoch = 1;
            p->origin_epoch_us = (double)times[0];
            p->peak_time_us = p->time_us[p->peak_index];
            for (int c = 0; c < OD_PCAT_COUNT; c++)
                p->peak_category_bytes[c] = p->category_bytes[c][p->peak_index];
        }
    }
    free(times);
    return st;
}

/* ---------- key_averages().table() ---------- */

/* "7.11 GB", "978.10 MB", "220 B", "-1.50 Mb": torch prints 1024-based units. */
static int parse_mem(const char *s, size_t n, int64_t *out)
{
    char tmp[64];
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n == 0 || n >= sizeof tmp)
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *end;
    double v = strtod(tmp, &end);
    if (end == tmp)
        return 0;
    while (*end == ' ')
        end++;
    double mul;
    if (!strcasecmp(end, "b")) mul = 1;
    else if (!strcasecmp(end, "kb")) mul = 1024.0;
    else if (!strcasecmp(end, "mb")) mul = 1024.0 * 1024;
    else if (!strcasecmp(end, "gb")) mul = 1024.0 * 1024 * 1024;
    else if (!strcasecmp(end, "tb")) mul = 1024.0 * 1024 * 1024 * 1024;
    else return 0;
    double b = v * mul;
    if (!(b > -9e18 && b < 9e18))
        return 0;
    *out = (int64_t)(b < 0 ? b - 0.5 : b + 0.5);
    return 1;
}

static int dashed(const char *line, size_t n)
{
    size_t dashes = 0;
    for (size_t i = 0; i < n; i++) {
        if (line[i] == '-')
            dashes++;
        else if (line[i] != ' ' && line[i] != '\r')
            return 0;
    }
    return dashes >= 8;
}

typedef struct {
    const char *s;
    size_t n;
} cell;

/* Split a table line into cells separated by two or more spaces: torch pads every cell
 * and puts two spaces between columns, and a cell wider than its rule (a header like
 * "CUDA time avg") shifts the rest of the line, so rule positions cannot be trusted. */
static size_t split_cells(const char *line, size_t n, cell *out, size_t max)
{
    size_t k = 0, i = 0;
    while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
        n--;
    while (i < n && line[i] == ' ')
        i++;
    while (i < n) {
        size_t st = i;
        while (i < n && !(line[i] == ' ' && i + 1 < n && line[i + 1] == ' '))
            i++;
        if (k < max)
            out[k] = (cell){line + st, i - st};
        k++;
        while (i < n && line[i] == ' ')
            i++;
    }
    return k;
}

static od_status load_table(const char *text, size_t len, od_profile *p, od_error *err)
{
    cell cells[64];
    size_t ncols = 0;
    int sep_seen = 0, self_col = -1, calls_col = -1;
    size_t cap = 0;
    size_t pos = 0;
    while (pos < len) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        uint64_t line_off = pos;
        pos += n + (nl != NULL);
        if (dashed(line, n)) {
            if (++sep_seen >= 3)
                break;
            continue;
        }
        if (sep_seen == 0)
            continue;
        size_t k = split_cells(line, n, cells, 64);
        if (sep_seen == 1) {
            if (k > 64 || k < 2 || cells[0].n != 4 || memcmp(cells[0].s, "Name", 4))
                return od_fail_at(err, OD_ERR_FORMAT, line_off, "expected the table header starting with Name");
            ncols = k;
            for (size_t c = 1; c < k; c++) {
                if (cells[c].n == 10 && !memcmp(cells[c].s, "# of Calls", 10))
                    calls_col = (int)c;
                else if (cells[c].n > 9 && !memcmp(cells[c].s, "Self ", 5) &&
                         !memcmp(cells[c].s + cells[c].n - 4, " Mem", 4) &&
                         !(cells[c].n == 12 && !memcmp(cells[c].s, "Self CPU Mem", 12)))
                    self_col = (int)c;
            }
            continue;
        }
        /* a data row */
        if (self_col < 0)
            return od_fail_at(err, OD_ERR_FORMAT, line_off,
                              "key_averages table without a Self CUDA Mem column (profile with profile_memory=True)");
        if (k == 0)
            continue;
        if (k < ncols)
            return od_fail_at(err, OD_ERR_FORMAT, line_off, "table row with %zu cells, the header has %zu", k, ncols);
        /* A name holding two spaces splits in two: the extra cells belong to it. */
        size_t extra = k - ncols;
        if (extra + ncols > 64)
            return od_fail_at(err, OD_ERR_FORMAT, line_off, "table row with too many cells");
        const char *nm = cells[0].s;
        size_t nml = (size_t)(cells[extra].s + cells[extra].n - nm);
        const cell *sc = &cells[(size_t)self_col + extra];
        int64_t bytes;
        if (!parse_mem(sc->s, sc->n, &bytes))
            return od_fail_at(err, OD_ERR_FORMAT, line_off + (uint64_t)(sc->s - line),
                              "expected a memory figure like \"7.11 GB\"");
        uint64_t calls = 0;
        if (calls_col >= 0) {
            const cell *cc = &cells[(size_t)calls_col + extra];
            char tmp[32];
            size_t l = cc->n < sizeof tmp - 1 ? cc->n : sizeof tmp - 1;
            memcpy(tmp, cc->s, l);
            tmp[l] = 0;
            calls = strtoull(tmp, NULL, 10);
        }
        char name[512];
        snprintf(name, sizeof name, "%.*s", (int)(nml < 511 ? nml : 511), nm);
        if (!ranking_add(&p->ops_self, &cap, name, bytes, calls))
            return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    if (sep_seen < 2 || self_col < 0)
        return od_fail_at(err, OD_ERR_FORMAT, pos,
                          "not a key_averages() table (expected dashed rules around a header with Name and Self CUDA Mem)");
    od_sort(p->ops_self.v, p->ops_self.n, sizeof *p->ops_self.v, cmp_rank);
    p->kind = OD_PROFILE_TORCH_TABLE;
    p->table_rounded = 1;
    return OD_OK;
}

/* ---------- BFC allocator log ---------- */

static int num_after(const char *line, size_t n, const char *tag, uint64_t *out)
{
    const char *end = line + n;
    size_t tl = strlen(tag);
    for (const char *p = line; p + tl <= end; p++) {
        if (memcmp(p, tag, tl))
            continue;
        p += tl;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        uint64_t v = 0;
        int d = 0;
        while (p < end && *p >= '0' && *p <= '9' && d < 19) {
            v = v * 10 + (uint64_t)(*p++ - '0');
            d++;
        }
        if (!d)
            return 0;
        *out = v;
        return 1;
    }
    return 0;
}

static const char *find_in(const char *line, size_t n, const char *tag)
{
    size_t tl = strlen(tag);
    for (size_t i = 0; i + tl <= n; i++)
        if (!memcmp(line + i, tag, tl))
            return line + i;
    return NULL;
}

static od_status load_bfc(const char *text, size_t len, od_profile *p, od_error *err)
{
    od_profile_bfc *b = &p->bfc;
    size_t pos = 0;
    int any = 0;
    while (pos < len) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + (nl != NULL);
        const char *q;
        uint64_t v;
        if ((q = find_in(line, n, "ran out of memory trying to allocate"))) {
            any = b->has_request = 1;
            if (num_after(line, n, "(rounded to", &v))
                b->requested_bytes = v;
            const char *a = find_in(line, n, "Allocator (");
            if (a) {
                a += 11;
                size_t k = 0;
                while (a + k < line + n && a[k] != ')' && k < sizeof b->allocator - 1)
                    k++;
                memcpy(b->allocator, a, k);
                b->allocator[k] = 0;
            }
            continue;
        }
        if (find_in(line, n, "Current allocation summary follows")) {
            any = b->has_summary = 1;
            continue;
        }
        if ((q = find_in(line, n, "InUse at ")) || (q = find_in(line, n, "Free  at ")) || (q = find_in(line, n, "Free at "))) {
            if (num_after(q, (size_t)(line + n - q), "of size", &v)) {
                any = 1;
                if (q[0] == 'I') {
                    b->n_in_use_chunks++;
                    b->in_use_chunk_bytes += v;
                } else {
                    b->n_free_chunks++;
                    b->free_chunk_bytes += v;
                    if (v > b->largest_free_chunk_bytes)
                        b->largest_free_chunk_bytes = v;
                }
            }
            continue;
        }
        /* The Stats block: "Limit: N", "InUse: N", "MaxInUse: N" (one per line). */
        if (num_after(line, n, "MaxInUse:", &v)) {
            b->max_in_use_bytes = v;
            any = b->has_stats = 1;
            continue;
        }
        if (num_after(line, n, "InUse:", &v)) {
            b->in_use_bytes = v;
            any = b->has_stats = 1;
            continue;
        }
        if (num_after(line, n, "Limit:", &v)) {
            b->limit_bytes = v;
            any = b->has_stats = 1;
            continue;
        }
        /* The occupancy bar: the message part is only '*', 'x' and '_' cells. */
        const char *msg = find_in(line, n, "] ");
        msg = msg ? msg + 2 : line;
        size_t ml = (size_t)(line + n - msg);
        while (ml && (msg[ml - 1] == '\r' || msg[ml - 1] == ' '))
            ml--;
        if (ml >= 16) {
            size_t fr = 0, k;
            for (k = 0; k < ml; k++) {
                if (msg[k] == '_')
                    fr++;
                else if (msg[k] != '*' && msg[k] != 'x')
                    break;
            }
            if (k == ml) {
                any = 1;
                b->bar_cells = ml;
                b->bar_free_cells = fr;
            }
        }
    }
    if (!any)
        return od_fail_at(err, OD_ERR_FORMAT, 0, "no BFC allocator lines found");
    p->kind = OD_PROFILE_BFC_LOG;
    return OD_OK;
}

/* ---------- JAX device memory profile (pprof) ---------- */

static od_status load_pprof(const char *data, size_t len, od_profile *p, od_error *err)
{
    od_pprof *pp = NULL;
    od_status st = od_pprof_parse(data, len, &pp, err);
    if (st)
        return st;
    int space = -1, count = -1;
    for (size_t i = 0; i < pp->n_sample_types; i++) {
        const char *ty = od_pprof_string(pp, pp->sample_types[i].type);
        const char *un = od_pprof_string(pp, pp->sample_types[i].unit);
        if (!strcmp(un, "bytes") && space < 0)
            space = (int)i;
        else if ((!strcmp(ty, "allocations") || !strcmp(un, "count")) && count < 0)
            count = (int)i;
    }
    if (space < 0) {
        od_pprof_free(pp);
        return od_fail_at(err, OD_ERR_FORMAT, 0, "pprof profile without a bytes sample type (not a memory profile)");
    }
    size_t cap_k = 0, cap_d = 0, cap_s = 0;
    char name[600];
    for (size_t i = 0; i < pp->n_samples && !st; i++) {
        const od_pprof_sample *s = &pp->samples[i];
        if ((size_t)space >= s->n_values)
            continue;
        int64_t bytes = s->values[space];
        uint64_t cnt = count >= 0 && (size_t)count < s->n_values && s->values[count] > 0 ? (uint64_t)s->values[count] : 1;
        if (bytes < 0)
            bytes = 0;
        p->live_bytes += (uint64_t)bytes;
        p->live_buffers += cnt;
        const char *kind = "", *dev = "";
        for (size_t l = 0; l < s->n_labels; l++) {
            const char *k = od_pprof_string(pp, s->labels[l].key);
            if (!strcmp(k, "kind"))
                kind = od_pprof_string(pp, s->labels[l].str);
            else if (!strcmp(k, "device"))
                dev = od_pprof_string(pp, s->labels[l].str);
        }
        /* The source: the innermost frame outside libraries, else the innermost. */
        const char *fn_name = NULL, *file = NULL;
        int64_t lineno = 0;
        int found_user = 0;
        for (size_t k = 0; k < s->n_locations && !found_user; k++) {
            const od_pprof_location *loc = od_pprof_location_by_id(pp, s->location_ids[k]);
            if (!loc)
                continue;
            for (size_t li = 0; li < loc->n_lines; li++) {
                const od_pprof_function *f = od_pprof_function_by_id(pp, loc->lines[li].function_id);
                if (!f)
                    continue;
                const char *fl = od_pprof_string(pp, f->filename);
                int user = !library_path(fl, strlen(fl));
                if (!fn_name || user) {
                    fn_name = od_pprof_string(pp, f->name);
                    file = fl;
                    lineno = loc->lines[li].line;
                }
                if (user) {
                    found_user = 1;
                    break;
                }
            }
        }
        if (fn_name)
            snprintf(name, sizeof name, "%s:%lld:%s", file, (long long)lineno, fn_name);
        else
            snprintf(name, sizeof name, "(no frame)");
        /* Merge into rankings (few entries: linear search is fine for small profiles,
         * and bounded by the sample count otherwise). */
        struct { od_profile_ranking *r; size_t *cap; const char *nm; } targets[3] = {
            {&p->by_kind, &cap_k, kind[0] ? kind : "(no kind)"},
            {&p->by_device, &cap_d, dev[0] ? dev : "(no device)"},
            {&p->by_source, &cap_s, name},
        };
        for (int t = 0; t < 3; t++) {
            od_profile_ranking *r = targets[t].r;
            size_t j;
            for (j = 0; j < r->n; j++)
                if (!strcmp(r->v[j].name, targets[t].nm))
                    break;
            if (j < r->n) {
                r->v[j].bytes += bytes;
                r->v[j].count += cnt;
            } else if (!ranking_add(r, targets[t].cap, targets[t].nm, bytes, cnt)) {
                st = od_fail(err, OD_ERR_NOMEM, "out of memory");
                break;
            }
        }
    }
    od_pprof_free(pp);
    if (st)
        return st;
    od_profile_ranking *rs[3] = {&p->by_kind, &p->by_device, &p->by_source};
    for (int t = 0; t < 3; t++)
        od_sort(rs[t]->v, rs[t]->n, sizeof *rs[t]->v, cmp_rank);
    p->kind = OD_PROFILE_JAX_PPROF;
    return OD_OK;
}

/* ---------- as a series for trend ---------- */

od_status od_profile_to_series(const od_profile *p, od_series **out, od_error *err)
{
    *out = NULL;
    if (p->n_points == 0)
        return od_fail(err, OD_ERR_FORMAT, "a %s has no memory timeline", od_profile_kind_name(p->kind));
    int by_step = p->n_steps >= 1;
    size_t n = by_step ? p->n_steps : p->n_points;
    od_series *s = calloc(1, sizeof *s);
    if (!s)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    s->n = n;
    s->time_indexed = !by_step;
    s->x = malloc(n * sizeof *s->x);
    s->y[OD_METRIC_ALLOCATED] = malloc(n * sizeof(double));
    int res = p->reserved_bytes != NULL;
    if (res)
        s->y[OD_METRIC_RESERVED] = malloc(n * sizeof(double));
    if (by_step)
        s->y[OD_METRIC_PEAK] = malloc(n * sizeof(double));
    if (!s->x || !s->y[OD_METRIC_ALLOCATED] || (res && !s->y[OD_METRIC_RESERVED]) || (by_step && !s->y[OD_METRIC_PEAK])) {
        od_series_free(s);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (by_step) {
            s->x[i] = (double)(i + 1);
            s->y[OD_METRIC_ALLOCATED][i] = (double)p->steps[i].allocated_bytes;
            s->y[OD_METRIC_PEAK][i] = (double)p->steps[i].peak_allocated_bytes;
            if (res)
                s->y[OD_METRIC_RESERVED][i] = (double)p->steps[i].reserved_bytes;
        } else {
            s->x[i] = p->time_us[i] / 1e6;
            s->y[OD_METRIC_ALLOCATED][i] = (double)p->allocated_bytes[i];
            if (res)
                s->y[OD_METRIC_RESERVED][i] = (double)p->reserved_bytes[i];
        }
    }
    *out = s;
    return OD_OK;
}

/* ---------- detection and loading ---------- */

static int looks_like_table(const char *t, size_t n)
{
    /* key_averages() always prints these columns; nvidia-smi's table has Name and Mem. */
    return find_in(t, n, "Name") && find_in(t, n, "# of Calls") && find_in(t, n, "Self CPU") &&
           find_in(t, n, "--------");
}

static int looks_like_bfc(const char *t, size_t n)
{
    return find_in(t, n, "ran out of memory trying to allocate") || find_in(t, n, "bfc_allocator") ||
           find_in(t, n, "Current allocation summary follows");
}

int od_profile_detect(const void *head, size_t len)
{
    const unsigned char *h = head;
    size_t i = 0;
    /* pprof: field 1 (sample_type, a ValueType message starting with its type field,
     * 0x08) or field 2 (a Sample starting with location ids, 0x0a) after a varint length.
     * Text starting with a newline fails the second test. */
    if (len >= 3 && (h[0] == 0x0a || h[0] == 0x12)) {
        size_t k = 1;
        while (k < len && k < 6 && (h[k] & 0x80))
            k++;
        if (k + 1 < len && ((h[0] == 0x0a && h[k + 1] == 0x08) || (h[0] == 0x12 && (h[k + 1] == 0x0a || h[k + 1] == 0x12))))
            return OD_PROFILE_JAX_PPROF;
    }
    while (i < len && (h[i] == ' ' || h[i] == '\n' || h[i] == '\r' || h[i] == '\t'))
        i++;
    if (i < len && h[i] == '[') {
        size_t j = i + 1;
        while (j < len && (h[j] == ' ' || h[j] == '\n' || h[j] == '\r' || h[j] == '\t'))
            j++;
        if (j < len && h[j] == '[')
            return OD_PROFILE_TORCH_TIMELINE;
        return -1;
    }
    if (i < len && h[i] == '{') {
        const char *t = (const char *)head;
        if (find_in(t, len, "\"traceEvents\"") || find_in(t, len, "\"schemaVersion\"") ||
            find_in(t, len, "\"deviceProperties\""))
            return OD_PROFILE_TORCH_TRACE;
        if (find_in(t, len, "\"bytes_in_use\"") || find_in(t, len, "\"peak_bytes_in_use\"") ||
            find_in(t, len, "\"bytes_limit\""))
            return OD_PROFILE_JAX_STATS;
        return -1;
    }
    if (looks_like_table(head, len))
        return OD_PROFILE_TORCH_TABLE;
    if (looks_like_bfc(head, len))
        return OD_PROFILE_BFC_LOG;
    return -1;
}

/* Read the rest of the input after head into one buffer (small formats only). */
static od_status read_whole(od_input *in, const char *head, size_t hlen, char **out, size_t *out_len, od_error *err)
{
    size_t cap = hlen + 65536, n = hlen;
    char *buf = malloc(cap + 1);
    if (!buf)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    memcpy(buf, head, hlen);
    for (;;) {
        if (n == cap) {
            if (cap >= MAX_WHOLE) {
                free(buf);
                return od_fail_at(err, OD_ERR_LIMIT, n, "larger than %u MiB: not a profiler record of this kind", MAX_WHOLE >> 20);
            }
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                return od_fail(err, OD_ERR_NOMEM, "out of memory");
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = od_input_read(in, buf + n, cap - n);
        if (got == 0)
            break;
        n += got;
    }
    od_status st = od_input_error(in, err);
    if (st) {
        free(buf);
        return st;
    }
    buf[n] = 0;
    *out = buf;
    *out_len = n;
    return OD_OK;
}

od_status od_profile_load(od_input *in, od_profile **out, od_error *err)
{
    *out = NULL;
    char head[HEAD_SIZE];
    size_t hlen = 0;
    while (hlen < sizeof head) {
        size_t got = od_input_read(in, head + hlen, sizeof head - hlen);
        if (got == 0)
            break;
        hlen += got;
    }
    od_status st = od_input_error(in, err);
    if (st)
        return st;
    if (hlen == 0)
        return od_fail_at(err, OD_ERR_FORMAT, 0, "empty file");
    int kind = od_profile_detect(head, hlen);
    /* A JSON object whose first 4 KiB name neither: let the stream reader decide. */
    size_t i = 0;
    while (i < hlen && isspace((unsigned char)head[i]))
        i++;
    if (kind < 0 && i < hlen && head[i] == '{')
        kind = OD_PROFILE_TORCH_TRACE;
    if (kind < 0)
        return od_fail_at(err, OD_ERR_FORMAT, 0,
                          "not a profiler record (expected a Chrome trace, a memory timeline, a key_averages table, a pprof memory profile, memory_stats JSON or BFC log lines)");
    od_profile *p = calloc(1, sizeof *p);
    if (!p)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    p->device = -1;
    if (kind == OD_PROFILE_TORCH_TRACE || kind == OD_PROFILE_JAX_STATS || kind == OD_PROFILE_TORCH_TIMELINE) {
        od_js *js = NULL;
        st = od_js_open(in, head, hlen, &js, err);
        if (!st)
            st = kind == OD_PROFILE_TORCH_TIMELINE ? load_timeline(js, p, err) : load_json_object(js, p, err);
        od_js_close(js);
    } else {
        char *buf = NULL;
        size_t len = 0;
        st = read_whole(in, head, hlen, &buf, &len, err);
        if (!st) {
            if (kind == OD_PROFILE_JAX_PPROF)
                st = load_pprof(buf, len, p, err);
            else if (kind == OD_PROFILE_TORCH_TABLE)
                st = load_table(buf, len, p, err);
            else
                st = load_bfc(buf, len, p, err);
        }
        free(buf);
    }
    if (st) {
        od_profile_free(p);
        return st;
    }
    *out = p;
    return OD_OK;
}

void od_profile_free(od_profile *p)
{
    if (!p)
        return;
    free(p->time_us);
    free(p->allocated_bytes);
    free(p->reserved_bytes);
    for (int c = 0; c < OD_PCAT_COUNT; c++)
        free(p->category_bytes[c]);
    free(p->spans);
    free(p->steps);
    ranking_free(&p->ops_at_peak);
    ranking_free(&p->sources_at_peak);
    ranking_free(&p->modules_at_peak);
    ranking_free(&p->ops_self);
    ranking_free(&p->by_kind);
    ranking_free(&p->by_device);
    ranking_free(&p->by_source);
    free(p);
}
