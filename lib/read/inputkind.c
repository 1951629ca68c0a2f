/* inputkind.c - one decision of what kind of input a file is (see inputkind.h). */
#include "read/inputkind.h"

#include <jansson.h>
#include <string.h>

#include "read/profile.h"
#include "read/trend.h"
#include "read/triage/triage.h"

/* Whether text[0..len) is a JSON object naming a model type and a hidden size: what a
 * Hugging Face config.json always holds. One the planner cannot read (an unknown
 * model_type) is still a config. */
static int is_config(const char *text, size_t len)
{
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))
        i++;
    if (i >= len || text[i] != '{')
        return 0;
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    int cfg = json_is_object(o) && (json_object_get(o, "model_type") || json_object_get(o, "architectures")) &&
              (json_object_get(o, "hidden_size") || json_object_get(o, "n_embd") || json_object_get(o, "d_model"));
    json_decref(o);
    return cfg;
}

/* Whether triage found anything in t. */
static int is_log(const od_triage *t)
{
    return t && (t->n_reports || t->n_summaries || t->stats || t->n_gpus || t->n_procs);
}

od_file_kind od_file_kind_settle(const char *text, size_t len, od_status series_status, const od_triage *t)
{
    if (text && is_config(text, len))
        return OD_FILE_CONFIG;
    if (series_status == OD_OK)
        return OD_FILE_SERIES;
    return is_log(t) ? OD_FILE_LOG : OD_FILE_NOTHING;
}

od_status od_file_kind_detect(const void *bytes, size_t len, unsigned flags, od_file_kind *out, od_error *err)
{
    /* what the first bytes tell: a pickle, a profiler record */
    const unsigned char *b = bytes;
    if (len > 1 && b[0] == 0x80) {
        *out = (flags & OD_DETECT_GZIP) ? OD_FILE_SNAPSHOT_GZIP : OD_FILE_SNAPSHOT;
        return OD_OK;
    }
    int pk = od_profile_detect(bytes, len < OD_FILE_HEAD_BYTES ? len : OD_FILE_HEAD_BYTES);
    if (pk >= 0) {
        *out = (od_file_kind)(OD_FILE_TORCH_TRACE + pk);
        return OD_OK;
    }
    if (flags & OD_DETECT_HEAD) {
        *out = OD_FILE_UNDECIDED;
        return OD_OK;
    }
    /* what the whole text tells, structure before free text */
    const char *text = bytes;
    if (is_config(text, len)) {
        *out = OD_FILE_CONFIG;
        return OD_OK;
    }
    od_series *s = NULL;
    od_error serr;
    od_status series_st = od_series_parse(text, len, &s, &serr);
    od_series_free(s);
    if (series_st == OD_ERR_NOMEM)
        return od_fail(err, OD_ERR_NOMEM, "%s", serr.msg);
    od_triage *t = NULL;
    if (series_st != OD_OK) {
        od_status st = od_triage_parse(text, len, &t, err);
        if (st == OD_ERR_NOMEM)
            return st;
    }
    *out = od_file_kind_settle(NULL, 0, series_st, t);
    od_triage_free(t);
    return OD_OK;
}

/* The profiler-record kinds mirror od_profile_kind one to one. */
_Static_assert(OD_FILE_BFC_LOG - OD_FILE_TORCH_TRACE == OD_PROFILE_BFC_LOG - OD_PROFILE_TORCH_TRACE &&
                   OD_PROFILE_KIND_COUNT == OD_PROFILE_BFC_LOG + 1,
               "od_file_kind's profiler kinds follow od_profile_kind");

int od_file_kind_snapshot(od_file_kind k)
{
    return k == OD_FILE_SNAPSHOT || k == OD_FILE_SNAPSHOT_GZIP;
}

int od_file_kind_profile(od_file_kind k)
{
    return k >= OD_FILE_TORCH_TRACE && k <= OD_FILE_BFC_LOG ? (int)(k - OD_FILE_TORCH_TRACE) : -1;
}

od_status od_headed_take(od_input *in, od_headed *h, od_error *err)
{
    memset(h, 0, sizeof *h);
    h->in = in;
    while (h->head_len < sizeof h->head) {
        const unsigned char *d;
        size_t n = od_input_borrow(in, &d);
        if (n == 0)
            break;
        size_t k = n < sizeof h->head - h->head_len ? n : sizeof h->head - h->head_len;
        memcpy(h->head + h->head_len, d, k);
        h->head_len += k;
        h->pending = d + k;
        h->pending_len = n - k;
    }
    return od_input_error(in, err);
}

od_status od_headed_each(od_headed *h, od_chunk_fn fn, void *ctx, od_error *err)
{
    if (h->head_len && fn(ctx, h->head, h->head_len))
        return OD_OK;
    if (h->pending_len && fn(ctx, h->pending, h->pending_len))
        return OD_OK;
    for (;;) {
        const unsigned char *d;
        size_t n = od_input_borrow(h->in, &d);
        if (n == 0)
            break;
        if (fn(ctx, d, n))
            return OD_OK;
    }
    return od_input_error(h->in, err);
}
