/* tables.c - the tables people paste beside an OOM: torch.cuda.memory_summary(), and
 * nvidia-smi's default table, its process list, -q -d MEMORY and --query-gpu CSV; and the
 * verdicts they give. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "read/triage/scan.h"

#define find od_tr_find_exact
#define starts od_tr_starts_exact
#define skip_sp od_tr_skip_sp
#define parse_uint od_tr_parse_uint
#define next_size od_tr_next_size
#define parse_size od_tr_parse_size

/* Grow arr (n used, cap allocated) by one element: its address, zeroed, or NULL. */
static void *grow_one(tr_scan *s, void **arr, size_t *n, size_t *cap, size_t size)
{
    if (!od_grow(arr, cap, *n + 1, size)) {
        s->nomem = 1;
        return NULL;
    }
    char *e = (char *)*arr + (*n)++ * size;
    memset(e, 0, size);
    return e;
}

static od_mem_summary *new_summary(tr_scan *s)
{
    return grow_one(s, (void **)&s->t->summaries, &s->t->n_summaries, &s->cap_summaries, sizeof *s->t->summaries);
}

/* The first size cell of a memory_summary row ("| Allocated memory | 1507 MiB | ..."),
 * and the second (peak). */
static void summary_row(const char *line, const char *le, uint64_t *cur, uint64_t *peak)
{
    const char *c = memchr(line + 1, '|', (size_t)(le - line - 1));
    od_tr_size t;
    if (!c || !next_size(c, le, line, &t))
        return;
    *cur = t.bytes;
    if (next_size(t.end, le, line, &t))
        *peak = t.bytes;
}

/* Lines after "PyTorch CUDA memory summary, device ID N" up to the table's end. Rows keep
 * the header line's own prefix: the table's '|' at the header's column ("# |" in a source
 * comment, "name  | |" from docker compose, "[rank0]: |"). A table printed as one string's
 * repr or JSON ("|...|\n|...|" with a backslash-n between rows) is read within its line. */
const char *od_tr_scan_summary(tr_scan *s, const char *line, const char *end, uint64_t *lineno)
{
    od_mem_summary *m = new_summary(s);
    if (!m)
        return NULL;
    m->offset = (uint64_t)(line - s->buf);
    m->line = *lineno;
    const char *hle = memchr(line, '\n', (size_t)(end - line));
    hle = hle ? hle : end;
    const char *h = find(line, hle, "device ID ");
    uint64_t d = 0;
    if (h)
        parse_uint(h + 10, hle, &d);
    m->device = d < 4096 ? (int)d : -1;
    const char *bar = NULL; /* the table's '|' on the header line */
    for (const char *c = line; h && c < h; c++)
        if (*c == '|')
            bar = c;
    size_t col = bar ? (size_t)(bar - line) : SIZE_MAX;
    const char *esc = h ? find(h, hle, "\\n|") : NULL;
    int lit = esc != NULL;
    const char *rows_end = lit ? hle : end;
    const char *p = lit ? esc + 2 : (hle < end ? hle + 1 : end);
    const char *last = p;
    for (int n = 0; p < rows_end && n < 120; n++) {
        const char *le = lit ? find(p, rows_end, "\\n") : memchr(p, '\n', (size_t)(rows_end - p));
        if (!le)
            le = rows_end;
        const char *q = !lit && (size_t)(le - p) > col && p[col] == '|' ? p + col : skip_sp(p, le);
        if (q >= le || *q != '|')
            break;
        if (!lit)
            (*lineno)++;
        const char *k;
        uint64_t v;
        if ((k = find(q, le, "CUDA OOMs:")) && parse_uint(skip_sp(k + 10, le), le, &v)) {
            m->ooms = v;
            m->have_counts = 1;
        }
        if ((k = find(q, le, "cudaMalloc retries:")) && parse_uint(skip_sp(k + 19, le), le, &v))
            m->retries = v;
        const char *lab = skip_sp(q + 1, le);
        if (starts(lab, le, "Allocated memory "))
            summary_row(q, le, &m->allocated_bytes, &m->allocated_peak_bytes);
        else if (starts(lab, le, "GPU reserved memory "))
            summary_row(q, le, &m->reserved_bytes, &m->reserved_peak_bytes);
        else if (starts(lab, le, "Non-releasable memory ")) {
            uint64_t pk = 0;
            summary_row(q, le, &m->non_releasable_bytes, &pk);
            m->have_non_releasable = 1;
        }
        p = le < rows_end ? le + (lit ? 2 : 1) : rows_end;
        last = p;
    }
    return lit ? (hle < end ? hle + 1 : end) : last;
}

/* ---------- nvidia-smi ---------- */

static od_smi_gpu *new_gpu(tr_scan *s)
{
    od_smi_gpu *g = grow_one(s, (void **)&s->t->gpus, &s->t->n_gpus, &s->cap_gpus, sizeof *s->t->gpus);
    if (g)
        g->index = (int)s->t->n_gpus - 1;
    return g;
}

static od_smi_process *new_proc(tr_scan *s)
{
    return grow_one(s, (void **)&s->t->procs, &s->t->n_procs, &s->cap_procs, sizeof *s->t->procs);
}

static void copy_trim(char *dst, size_t dsz, const char *p, const char *e)
{
    while (p < e && isspace((unsigned char)*p))
        p++;
    while (e > p && isspace((unsigned char)e[-1]))
        e--;
    size_t n = (size_t)(e - p) < dsz - 1 ? (size_t)(e - p) : dsz - 1;
    memcpy(dst, p, n);
    dst[n] = '\0';
}

/* Default table: "|   0  NVIDIA H200   On  |   00000000:00:06.0 Off |" then
 * "| N/A 39C P0 80W / 700W |  0MiB / 143771MiB | ...". */
int od_tr_scan_smi_table(tr_scan *s, const char *prev, const char *prev_end, const char *line,
                          const char *le)
{
    const char *sl = find(line, le, "MiB /");
    if (!sl || *skip_sp(line, le) != '|')
        return 0;
    const char *c1 = memchr(line + 1, '|', (size_t)(le - line - 1));
    if (!c1 || c1 > sl)
        return 0;
    od_tr_size used, total;
    const char *u = sl;
    while (u > c1 + 1 && isdigit((unsigned char)u[-1]))
        u--;
    if (!parse_size(u, le, &used) || !next_size(used.end, le, line, &total))
        return 0;
    od_smi_gpu *g = new_gpu(s);
    if (!g)
        return 1;
    g->used_bytes = used.bytes;
    g->total_bytes = total.bytes;
    s->t->smi_format = "table";
    if (prev && *skip_sp(prev, prev_end) == '|') {
        const char *q = skip_sp(skip_sp(prev, prev_end) + 1, prev_end);
        uint64_t idx;
        const char *e = parse_uint(q, prev_end, &idx);
        if (e && idx < 4096) {
            g->index = (int)idx;
            const char *ne = memchr(e, '|', (size_t)(prev_end - e));
            if (!ne)
                ne = prev_end;
            /* The name ends where the Persistence-M column ("On"/"Off") starts. */
            const char *pm = ne;
            while (pm > e && isspace((unsigned char)pm[-1]))
                pm--;
            while (pm > e && !isspace((unsigned char)pm[-1]))
                pm--;
            copy_trim(g->name, sizeof g->name, e, pm);
            if (ne < prev_end) {
                const char *b = skip_sp(ne + 1, prev_end), *be = b;
                while (be < prev_end && !isspace((unsigned char)*be) && *be != '|')
                    be++;
                copy_trim(g->bus_id, sizeof g->bus_id, b, be);
            }
        }
    }
    return 1;
}

/* Process table row: "|    0   N/A  N/A    12345      C   python     1234MiB |". */
void od_tr_scan_smi_proc(tr_scan *s, const char *line, const char *le)
{
    const char *tok[32], *tend[32];
    int n = 0;
    const char *p = skip_sp(line, le);
    if (p >= le || *p != '|')
        return;
    p++;
    while (p < le && n < 32) {
        p = skip_sp(p, le);
        if (p >= le || *p == '|')
            break;
        tok[n] = p;
        while (p < le && !isspace((unsigned char)*p) && *p != '|')
            p++;
        tend[n++] = p;
    }
    if (n < 4)
        return;
    uint64_t gpu, pid;
    od_tr_size mem;
    if (parse_uint(tok[0], tend[0], &gpu) != tend[0] || !parse_size(tok[n - 1], tend[n - 1], &mem))
        return;
    for (int k = 1; k + 2 < n; k++) {
        size_t tl = (size_t)(tend[k + 1] - tok[k + 1]);
        int type = (tl == 1 && (*tok[k + 1] == 'C' || *tok[k + 1] == 'G' || *tok[k + 1] == 'M')) ||
                   (tl == 3 && (!memcmp(tok[k + 1], "C+G", 3) || !memcmp(tok[k + 1], "M+C", 3)));
        if (type && parse_uint(tok[k], tend[k], &pid) == tend[k]) {
            od_smi_process *pr = new_proc(s);
            if (!pr)
                return;
            pr->gpu = gpu < 4096 ? (int)gpu : -1;
            pr->pid = pid;
            pr->bytes = mem.bytes;
            if (!s->t->smi_format)
                s->t->smi_format = "table"; /* the default output's process list, pasted alone */
            if (k + 2 <= n - 2)
                copy_trim(pr->name, sizeof pr->name, tok[k + 2], tend[n - 2]);
            return;
        }
    }
}

/* nvidia-smi -q [-d MEMORY]: "GPU 00000000:00:06.0", then "FB Memory Usage" with
 * "Total : N MiB", "Reserved", "Used", "Free" lines. */
const char *od_tr_scan_smi_query(tr_scan *s, const char *line, const char *le, const char *end,
                                  uint64_t *lineno)
{
    od_smi_gpu *g = NULL;
    /* The GPU header is the nearest "GPU xxxx:" line above. */
    const char *p = line;
    const char *gl = NULL, *gle = NULL;
    for (const char *q = line; q > s->buf;) {
        const char *ps = q - 1;
        while (ps > s->buf && ps[-1] != '\n')
            ps--;
        const char *t = skip_sp(ps, q - 1);
        if (starts(t, q - 1, "GPU ") && !find(t, q - 1, " : ")) {
            gl = t + 4;
            gle = q - 1;
            break;
        }
        if (starts(t, q - 1, "FB Memory Usage") && ps != line)
            break;
        q = ps;
        if (line - q > 4096)
            break;
    }
    g = new_gpu(s);
    if (!g)
        return NULL;
    s->t->smi_format = "query";
    if (gl)
        copy_trim(g->bus_id, sizeof g->bus_id, gl, gle);
    p = le < end ? le + 1 : end;
    for (int n = 0; p < end && n < 8; n++) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e)
            e = end;
        const char *k = skip_sp(p, e);
        const char *colon = find(k, e, ":");
        od_tr_size t;
        if (!colon || !next_size(colon, e, k, &t))
            break;
        (*lineno)++;
        if (starts(k, e, "Total"))
            g->total_bytes = t.bytes;
        else if (starts(k, e, "Reserved")) {
            g->reserved_bytes = t.bytes;
            g->have_reserved = 1;
        } else if (starts(k, e, "Used"))
            g->used_bytes = t.bytes;
        else if (starts(k, e, "Free")) {
            g->free_bytes = t.bytes;
            g->have_free = 1;
        }
        p = e < end ? e + 1 : end;
    }
    return p;
}

/* --query-gpu=...,memory.total,... --format=csv: a header naming the columns, then one
 * line per GPU. Units come from the header ("[MiB]") when values are bare numbers. */
const char *od_tr_scan_smi_csv(tr_scan *s, const char *line, const char *le, const char *end,
                                uint64_t *lineno)
{
    enum { C_INDEX, C_NAME, C_BUS, C_TOTAL, C_USED, C_FREE, C_RESERVED, C_OTHER };
    int col[32];
    uint64_t mult[32];
    int ncol = 0;
    const char *p = line;
    while (p <= le && ncol < 32) {
        const char *e = memchr(p, ',', (size_t)(le - p));
        if (!e)
            e = le;
        char name[64];
        copy_trim(name, sizeof name, p, e);
        int c = C_OTHER;
        if (!strncmp(name, "index", 5)) c = C_INDEX;
        else if (!strncmp(name, "name", 4)) c = C_NAME;
        else if (!strncmp(name, "pci.bus_id", 10)) c = C_BUS;
        else if (!strncmp(name, "memory.total", 12)) c = C_TOTAL;
        else if (!strncmp(name, "memory.used", 11)) c = C_USED;
        else if (!strncmp(name, "memory.free", 11)) c = C_FREE;
        else if (!strncmp(name, "memory.reserved", 15)) c = C_RESERVED;
        mult[ncol] = strstr(name, "[GiB]") ? 1ULL << 30 : strstr(name, "[KiB]") ? 1ULL << 10 : 1ULL << 20;
        col[ncol++] = c;
        p = e + 1;
    }
    p = le < end ? le + 1 : end;
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e)
            e = end;
        if (!find(p, e, ","))
            break;
        od_smi_gpu *g = new_gpu(s);
        if (!g)
            return NULL;
        s->t->smi_format = "csv";
        (*lineno)++;
        const char *f = p;
        for (int i = 0; i < ncol && f <= e; i++) {
            const char *fe = memchr(f, ',', (size_t)(e - f));
            if (!fe)
                fe = e;
            const char *v = skip_sp(f, fe);
            od_tr_size t;
            uint64_t u = 0;
            int have = 0;
            if (parse_size(v, fe, &t)) {
                u = t.bytes;
                have = 1;
            } else if (parse_uint(v, fe, &u)) {
                u *= mult[i];
                have = 1;
            }
            switch (col[i]) {
            case C_INDEX: if (have) { uint64_t x; if (parse_uint(v, fe, &x) && x < 4096) g->index = (int)x; } break;
            case C_NAME: copy_trim(g->name, sizeof g->name, f, fe); break;
            case C_BUS: copy_trim(g->bus_id, sizeof g->bus_id, f, fe); break;
            case C_TOTAL: g->total_bytes = u; break;
            case C_USED: g->used_bytes = u; break;
            case C_FREE: g->free_bytes = u; g->have_free = have; break;
            case C_RESERVED: g->reserved_bytes = u; g->have_reserved = have; break;
            default: break;
            }
            f = fe + 1;
        }
        p = e < end ? e + 1 : end;
    }
    return p;
}

/* Is the stranded (non-releasable, inactive split) memory most of the cache held but not
 * allocated? Then the OOMs counted beside it were fragmentation. */
static int stranded_like(uint64_t stranded, uint64_t reserved_unalloc)
{
    return reserved_unalloc > 0 && (unsigned __int128)stranded * 4 >= (unsigned __int128)reserved_unalloc * 3;
}

/* Does an nvidia-smi process row hold enough to crowd a job out? A desktop's X server and
 * compositor hold tens of MiB (86 MiB and 12 MiB in a real table), a bare CUDA context about
 * 300 MiB: rows under 256 MiB are not the other processes an OOM is blamed on. */
#define SMI_PROCESS_MIN_BYTES (256ULL << 20)

static int smi_holds(const od_smi_process *p)
{
    return p->bytes >= SMI_PROCESS_MIN_BYTES;
}

/* A driver report without figures takes its evidence from the nvidia-smi process table
 * in the same text: the processes holding memory on its GPU (when it names none, on the GPU
 * with the most of them). Fills r->smi_processes and r->smi_processes_bytes. */
static void smi_evidence(const od_triage *t, od_oom_report *r)
{
    r->smi_processes = 0;
    r->smi_processes_bytes = 0;
    if (r->kind != OD_KIND_DRIVER || (r->have & OD_HAVE_REQUESTED))
        return;
    for (size_t i = 0; i < t->n_procs; i++) {
        const od_smi_process *p = &t->procs[i];
        if (!smi_holds(p) || ((r->have & OD_HAVE_DEVICE) && p->gpu != r->device))
            continue;
        unsigned n = 0;
        uint64_t bytes = 0;
        int seen = 0;
        for (size_t j = 0; j < t->n_procs && !seen; j++)
            seen = j < i && t->procs[j].gpu == p->gpu && smi_holds(&t->procs[j]); /* counted with an earlier row */
        if (seen)
            continue;
        for (size_t j = i; j < t->n_procs; j++)
            if (t->procs[j].gpu == p->gpu && smi_holds(&t->procs[j])) {
                n++;
                bytes += t->procs[j].bytes;
            }
        if (n > r->smi_processes) {
            r->smi_processes = n;
            r->smi_processes_bytes = bytes;
        }
    }
}

void od_tr_tables_verdicts(od_triage *t)
{
    for (size_t i = 0; i < t->n_summaries; i++) {
        od_mem_summary *m = &t->summaries[i];
        uint64_t ru = m->reserved_bytes > m->allocated_bytes ? m->reserved_bytes - m->allocated_bytes : 0;
        m->verdict = m->have_counts && m->ooms > 0 && m->have_non_releasable && stranded_like(m->non_releasable_bytes, ru)
                         ? OD_OOM_FRAGMENTATION
                         : OD_OOM_UNKNOWN;
    }
    if (t->stats) {
        od_mem_stats *m = t->stats;
        unsigned need = OD_MS_ALLOCATED | OD_MS_RESERVED | OD_MS_INACTIVE | OD_MS_OOMS;
        m->verdict = (m->have & need) == need && m->ooms > 0 && m->reserved_bytes > m->allocated_bytes &&
                             stranded_like(m->inactive_split_bytes, m->reserved_bytes - m->allocated_bytes)
                         ? OD_OOM_FRAGMENTATION
                         : OD_OOM_UNKNOWN;
    }
    t->smi_verdict = OD_OOM_UNKNOWN;
    for (size_t i = 0; i < t->n_procs; i++)
        for (size_t j = i + 1; j < t->n_procs; j++)
            if (t->procs[i].gpu == t->procs[j].gpu && t->procs[i].pid != t->procs[j].pid && smi_holds(&t->procs[i]) &&
                smi_holds(&t->procs[j]))
                t->smi_verdict = OD_OOM_OTHER_PROCESSES;
    for (size_t i = 0; i < t->n_reports; i++)
        smi_evidence(t, &t->reports[i]);
}
