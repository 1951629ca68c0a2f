/* sites.c - classifying stack frames into user code, libraries and torch. */
#include "model/sites.h"

#include "base/mem.h"
#include "base/textsafe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int has_package_dir(const char *f)
{
    return strstr(f, "/site-packages/") || strstr(f, "/dist-packages/") ||
           strstr(f, "\\site-packages\\") || strstr(f, "\\dist-packages\\");
}

od_frame_kind od_frame_classify(const char *f)
{
    if (!f || !f[0] || f[0] == '<')
        return OD_FRAME_SPECIAL;
    if (has_package_dir(f)) {
        if (strstr(f, "-packages/torch/") || strstr(f, "-packages\\torch\\"))
            return OD_FRAME_TORCH;
        return OD_FRAME_PACKAGE;
    }
    /* The standard library: .../lib/python3.12/x.py, .../lib64/python3.11/..., Windows' Lib\ */
    const char *p = strstr(f, "/lib/python");
    if (!p)
        p = strstr(f, "/lib64/python");
    if (p || strstr(f, "\\Lib\\"))
        return OD_FRAME_STDLIB;
    return OD_FRAME_USER;
}

void od_stack_site(const od_snapshot *snap, uint32_t stack, int64_t *site_frame, int64_t *where_frame)
{
    uint32_t n;
    const uint32_t *fr = od_snapshot_stack(snap, stack, &n);
    *site_frame = -1;
    *where_frame = -1;
    for (uint32_t i = 0; i < n; i++) {
        od_frame_kind k = od_frame_classify(snap->frames[fr[i]].filename);
        if (*where_frame < 0 && (k == OD_FRAME_USER || k == OD_FRAME_PACKAGE))
            *where_frame = fr[i];
        if (k == OD_FRAME_USER) {
            *site_frame = fr[i];
            break;
        }
    }
    if (n && *where_frame < 0)
        *where_frame = fr[0];
    if (*site_frame < 0)
        *site_frame = *where_frame;
}

char *od_frame_format(const od_snapshot *snap, int64_t frame, char *buf, size_t size)
{
    if (frame < 0 || (size_t)frame >= snap->n_frames) {
        snprintf(buf, size, "%s", OD_SITE_NO_FRAMES);
        return buf;
    }
    const od_frame *f = &snap->frames[frame];
    char mid[32];
    int ml = snprintf(mid, sizeof mid, ":%lld:", (long long)f->line);
    size_t fl = strlen(f->filename), nl = strlen(f->name);
    if (fl + (size_t)ml + nl < size || size < 128) {
        int n = snprintf(buf, size, "%s%s%s", f->filename, mid, f->name);
        /* A cut never ends inside a character: the text stays UTF-8 (JSON refuses less). */
        if (n >= 0 && (size_t)n >= size && size)
            buf[od_utf8_trim(buf, size - 1)] = 0;
        return buf;
    }
    /* Too long for buf: the function keeps at most half of it, the file the end of its
     * name after "..." (the end names the file), each cut at a character boundary. */
    size_t room = size - 1;
    size_t nk = od_utf8_cut(f->name, nl, room / 2);
    size_t fk = room - (size_t)ml - nk - 3;
    const char *fs = f->filename + (fl > fk ? fl - fk : 0);
    while (fs > f->filename && fs < f->filename + fl && ((unsigned char)*fs & 0xc0) == 0x80)
        fs++;
    snprintf(buf, size, "...%s%s%.*s", fs, mid, (int)nk, f->name);
    return buf;
}

int od_stack_is_init(const od_snapshot *snap, uint32_t stack)
{
    static const char *const init_names[] = {
        "__init__", "_apply", "to", "cuda", "from_pretrained", "from_config", "_from_config",
        "load_state_dict", "_load_from_state_dict", "reset_parameters", "init_weights",
        "_init_weights", "post_init", "initialize_weights", "to_empty", "materialize", NULL,
    };
    uint32_t n;
    const uint32_t *fr = od_snapshot_stack(snap, stack, &n);
    for (uint32_t i = 0; i < n; i++) {
        const od_frame *f = &snap->frames[fr[i]];
        if (f->name && strcmp(f->name, "forward") == 0)
            return 0;
        for (const char *const *k = init_names; *k; k++)
            if (f->name && strcmp(f->name, *k) == 0)
                return 1;
    }
    return 0;
}

char *od_stack_module_path(const od_snapshot *snap, uint32_t stack, char *buf, size_t size)
{
    uint32_t n;
    const uint32_t *fr = od_snapshot_stack(snap, stack, &n);
    size_t o = 0;
    if (size)
        buf[0] = 0;
    for (uint32_t i = n; i-- > 0 && size;) { /* outermost first */
        const od_frame *f = &snap->frames[fr[i]];
        od_frame_kind k = od_frame_classify(f->filename);
        if (!f->name || strcmp(f->name, "forward") != 0 || (k != OD_FRAME_USER && k != OD_FRAME_PACKAGE))
            continue;
        const char *base = strrchr(f->filename, '/');
        base = base ? base + 1 : f->filename;
        int w = snprintf(buf + o, size - o, "%s%s:%lld", o ? " > " : "", base, (long long)f->line);
        if (w < 0 || (size_t)w >= size - o) {
            buf[o] = 0; /* the deepest modules that do not fit are left out */
            break;
        }
        o += (size_t)w;
    }
    return buf;
}

static int cmp_named_name(const void *pa, const void *pb)
{
    return strcmp(((const od_named_bytes *)pa)->name, ((const od_named_bytes *)pb)->name);
}

static int cmp_named_bytes(const void *pa, const void *pb)
{
    const od_named_bytes *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return strcmp(a->name, b->name);
}

size_t od_named_bytes_top(od_named_bytes *rows, size_t n, size_t k)
{
    if (!n)
        return 0;
    od_sort(rows, n, sizeof *rows, cmp_named_name);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && strcmp(rows[m - 1].name, rows[i].name) == 0)
            rows[m - 1].bytes += rows[i].bytes;
        else
            rows[m++] = rows[i];
    }
    od_sort(rows, m, sizeof *rows, cmp_named_bytes);
    while (m && !rows[m - 1].bytes)
        m--;
    return m < k ? m : k;
}
