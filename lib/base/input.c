/* input.c - streaming input with transparent gzip (zlib).
 *
 * A gzip file or a pipe is read (and inflated) by a background thread into a small ring
 * of buffers, so that reading and decompressing overlap with the parser on a second core.
 * A regular uncompressed file and memory input are read synchronously, in 256 KiB pieces
 * that stay in the core's cache: there, copying from the page cache costs less than
 * handing cold 1 MiB slots between threads (on the real 1 M-event snapshot the thread
 * cost a fifth of the CPU time for no gain but wall time). Either way at most a few MiB
 * are held. */
#include "oomdoc/input.h"

#include "base/reread.h"

#include <pthread.h>
#include <unistd.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define RAW_CHUNK (64u * 1024u)
#define SLOTS 4
#define SLOT_SIZE (1u << 20)

typedef struct {
    unsigned char *data;
    size_t len;
    int last;                   /* the stream ends after this slot (EOF or error) */
    uint64_t raw_end;           /* source bytes consumed once this slot was filled */
} slot;

/* The background reader: the thread fills slots[tail...], the reader drains slots[head]. */
typedef struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot slots[SLOTS];
    int head, count, stop, done;
    int held;                   /* slots[head] is lent out by od_input_borrow */
    size_t pos;                 /* read position in slots[head] */
    uint64_t raw_at;            /* raw_end of the slot last lent */
} async_reader;

struct od_input {
    FILE *file;                 /* NULL for memory input */
    const unsigned char *mem;   /* memory input */
    size_t mem_size, mem_pos;
    int gzip;
    int eof;                    /* raw source exhausted */
    int stream_end;             /* gzip: final member ended */
    od_status status;
    od_error err;
    uint64_t raw_offset;
    z_stream z;
    int z_ready;
    unsigned char *raw;         /* compressed bytes waiting for inflate */
    size_t raw_len, raw_pos;
    async_reader *async;        /* NULL: read synchronously */
    unsigned char *lend;        /* od_input_borrow's buffer for synchronous gzip/file input */
    size_t chunk_limit;         /* od_input_limit_chunks */
    od_input *rest;             /* od_input_open_resumed: the stream after pre[] */
    const unsigned char *pre[2];
    size_t pre_len[2];
    od_input_progress_fn progress;
    void *progress_ctx;
    uint64_t progress_next;     /* report again from here */
    int progress_done;
    int rereadable;             /* a regular uncompressed file, read synchronously */
    int fd;                     /* od_input_open_at: read with pread from here ... */
    uint64_t file_start;        /* ... the file offset of this stream's byte 0 */
};

#define PROGRESS_STEP (1u << 20)

static size_t read_sync(od_input *in, void *buf, size_t n);

static size_t raw_read(od_input *in, unsigned char *buf, size_t n)
{
    if (in->fd >= 0 && !in->file && !in->mem) { /* od_input_open_at */
        size_t got = 0;
        while (got < n) {
            ssize_t k = pread(in->fd, buf + got, n - got, (off_t)(in->file_start + in->raw_offset + got));
            if (k < 0) {
                in->status = od_fail_at(&in->err, OD_ERR_IO, in->raw_offset + got, "read error");
                break;
            }
            if (k == 0)
                break;
            got += (size_t)k;
        }
        if (got < n)
            in->eof = 1;
        in->raw_offset += got;
        return got;
    }
    if (in->file) {
        size_t got = fread(buf, 1, n, in->file);
        if (got < n) {
            if (ferror(in->file)) {
                in->status = od_fail_at(&in->err, OD_ERR_IO, in->raw_offset + got, "read error");
            }
            in->eof = 1;
        }
        in->raw_offset += got;
        return got;
    }
    size_t left = in->mem_size - in->mem_pos;
    size_t got = n < left ? n : left;
    memcpy(buf, in->mem + in->mem_pos, got);
    in->mem_pos += got;
    in->raw_offset += got;
    if (in->mem_pos == in->mem_size)
        in->eof = 1;
    return got;
}

static od_status start(od_input *in, od_input **out, od_error *err)
{
    in->raw = malloc(RAW_CHUNK);
    if (!in->raw) {
        free(in);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    /* Peek at the first two bytes: they stay in raw[] and are served first. */
    in->raw_len = raw_read(in, in->raw, 2);
    if (in->status != OD_OK) {
        *err = in->err;
        od_input_close(in);
        return err->status;
    }
    if (in->raw_len == 2 && in->raw[0] == 0x1f && in->raw[1] == 0x8b) {
        in->gzip = 1;
        if (inflateInit2(&in->z, 16 + MAX_WBITS) != Z_OK) {
            od_input_close(in);
            return od_fail(err, OD_ERR_NOMEM, "cannot initialise zlib");
        }
        in->z_ready = 1;
    }
    *out = in;
    return OD_OK;
}

static void *reader_main(void *arg)
{
    od_input *in = arg;
    async_reader *a = in->async;
    for (int tail = 0;; tail = (tail + 1) % SLOTS) {
        pthread_mutex_lock(&a->mu);
        while (a->count == SLOTS && !a->stop)
            pthread_cond_wait(&a->cv, &a->mu);
        int stop = a->stop;
        pthread_mutex_unlock(&a->mu);
        if (stop)
            break;
        slot *sl = &a->slots[tail];
        sl->len = 0;
        while (sl->len < SLOT_SIZE) {
            size_t got = read_sync(in, sl->data + sl->len, SLOT_SIZE - sl->len);
            if (got == 0)
                break;
            sl->len += got;
        }
        sl->last = sl->len < SLOT_SIZE;
        sl->raw_end = in->raw_offset;
        pthread_mutex_lock(&a->mu);
        a->count++;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
        if (sl->last)
            break;
    }
    return NULL;
}

static void async_free(async_reader *a)
{
    for (int i = 0; i < SLOTS; i++)
        free(a->slots[i].data);
    free(a);
}

/* Start the background reader; on failure the input simply stays synchronous. */
static void async_start(od_input *in)
{
    async_reader *a = calloc(1, sizeof *a);
    if (!a)
        return;
    for (int i = 0; i < SLOTS; i++) {
        a->slots[i].data = malloc(SLOT_SIZE);
        if (!a->slots[i].data) {
            async_free(a);
            return;
        }
    }
    if (pthread_mutex_init(&a->mu, NULL) != 0) {
        async_free(a);
        return;
    }
    if (pthread_cond_init(&a->cv, NULL) != 0) {
        pthread_mutex_destroy(&a->mu);
        async_free(a);
        return;
    }
    in->async = a;
    if (pthread_create(&a->thread, NULL, reader_main, in) != 0) {
        in->async = NULL;
        pthread_cond_destroy(&a->cv);
        pthread_mutex_destroy(&a->mu);
        async_free(a);
    }
}

od_status od_input_open_file(FILE *f, od_input **out, od_error *err)
{
    od_input *in = calloc(1, sizeof *in);
    if (!in)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    in->file = f;
    in->fd = -1;
    od_status st = start(in, out, err);
    struct stat sb;
    if (st == OD_OK && (in->gzip || fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode))) {
        async_start(in);
    } else if (st == OD_OK) {
        off_t at = ftello(f); /* past the 2 bytes start() peeked */
        if (at >= 2) {
            in->rereadable = 1;
            in->file_start = (uint64_t)at - 2;
        }
    }
    return st;
}

int od_input_can_reread(const od_input *in)
{
    return in && in->rereadable;
}

od_status od_input_open_at(const od_input *in, uint64_t offset, od_input **out, od_error *err)
{
    *out = NULL;
    if (!od_input_can_reread(in))
        return od_fail(err, OD_ERR_ARG, "this input cannot be read again");
    od_input *r = calloc(1, sizeof *r);
    if (!r)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    r->fd = fileno(in->file);
    r->file_start = in->file_start;
    r->raw_offset = offset;
    r->raw = malloc(RAW_CHUNK);
    if (!r->raw) {
        free(r);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    *out = r;
    return OD_OK;
}

od_status od_input_open_memory(const void *data, size_t size, od_input **out, od_error *err)
{
    od_input *in = calloc(1, sizeof *in);
    if (!in)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    in->mem = data;
    in->fd = -1;
    in->mem_size = size;
    in->eof = size == 0;
    return start(in, out, err);
}

od_status od_input_open_resumed(const void *a, size_t na, const void *b, size_t nb, od_input *rest,
                                od_input **out, od_error *err)
{
    od_input *in = calloc(1, sizeof *in);
    if (!in)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    in->rest = rest;
    in->fd = -1;
    in->pre[0] = a;
    in->pre_len[0] = na;
    in->pre[1] = b;
    in->pre_len[1] = nb;
    *out = in;
    return OD_OK;
}

/* A resumed input's next bytes: the taken ones first, then rest's. */
static size_t borrow_resumed(od_input *in, const unsigned char **data, size_t lim)
{
    for (int i = 0; i < 2; i++)
        if (in->pre_len[i]) {
            size_t k = in->pre_len[i] < lim ? in->pre_len[i] : lim;
            *data = in->pre[i];
            in->pre[i] += k;
            in->pre_len[i] -= k;
            return k;
        }
    return od_input_borrow(in->rest, data);
}

void od_input_close(od_input *in)
{
    if (!in)
        return;
    if (in->async) {
        async_reader *a = in->async;
        pthread_mutex_lock(&a->mu);
        a->stop = 1;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
        pthread_join(a->thread, NULL);
        pthread_cond_destroy(&a->cv);
        pthread_mutex_destroy(&a->mu);
        async_free(a);
    }
    if (in->z_ready)
        inflateEnd(&in->z);
    free(in->raw);
    free(in->lend);
    free(in);
}

static size_t read_plain(od_input *in, unsigned char *buf, size_t n)
{
    size_t done = 0;
    if (in->raw_pos < in->raw_len) {
        size_t k = in->raw_len - in->raw_pos;
        if (k > n)
            k = n;
        memcpy(buf, in->raw + in->raw_pos, k);
        in->raw_pos += k;
        done = k;
    }
    while (done < n && !in->eof && in->status == OD_OK)
        done += raw_read(in, buf + done, n - done);
    return done;
}

static size_t read_gzip(od_input *in, unsigned char *buf, size_t n)
{
    in->z.next_out = buf;
    in->z.avail_out = (uInt)n;
    while (in->z.avail_out > 0 && !in->stream_end && in->status == OD_OK) {
        if (in->raw_pos == in->raw_len && !in->eof) {
            in->raw_len = raw_read(in, in->raw, RAW_CHUNK);
            in->raw_pos = 0;
        }
        /* Even with no compressed bytes left, inflate may still hold output it decoded
         * (a small output buffer stops it mid-copy): ask until it makes no progress. */
        in->z.next_in = in->raw + in->raw_pos;
        in->z.avail_in = (uInt)(in->raw_len - in->raw_pos);
        int rc = inflate(&in->z, Z_NO_FLUSH);
        in->raw_pos = in->raw_len - in->z.avail_in;
        if (rc == Z_STREAM_END) {
            /* Concatenated gzip members are one stream, as gzip(1) reads them. */
            if (in->raw_pos == in->raw_len && !in->eof) {
                in->raw_len = raw_read(in, in->raw, RAW_CHUNK);
                in->raw_pos = 0;
            }
            if (in->raw_pos < in->raw_len && in->raw[in->raw_pos] == 0x1f) {
                inflateReset(&in->z);
            } else {
                in->stream_end = 1;
            }
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            uint64_t at = in->raw_offset - (in->raw_len - in->raw_pos);
            const char *m = in->z.msg ? in->z.msg : "inflate failed";
            if (strcmp(m, "incorrect data check") == 0)
                in->status = od_fail_at(&in->err, OD_ERR_FORMAT, at, "gzip trailer: the CRC-32 does not "
                                        "match the data (compressed byte offset; the file is damaged)");
            else if (strcmp(m, "incorrect length check") == 0)
                in->status = od_fail_at(&in->err, OD_ERR_FORMAT, at, "gzip trailer: the length (ISIZE) does "
                                        "not match the data (compressed byte offset; the file is damaged)");
            else
                in->status = od_fail_at(&in->err, OD_ERR_FORMAT, at, "corrupt gzip data (compressed byte offset): %s", m);
        } else if (rc == Z_BUF_ERROR && in->z.avail_in == 0 && in->eof) {
            break;
        }
    }
    size_t got = n - in->z.avail_out;
    if (got == 0 && !in->stream_end && in->status == OD_OK && in->eof)
        in->status = od_fail_at(&in->err, OD_ERR_FORMAT, in->raw_offset,
                                "truncated gzip data (compressed byte offset)");
    return got;
}

static size_t read_sync(od_input *in, void *buf, size_t n)
{
    if (in->status != OD_OK || n == 0)
        return 0;
    return in->gzip ? read_gzip(in, buf, n) : read_plain(in, buf, n);
}

/* Give slots[head] back to the reader thread. */
static void release_head(async_reader *a)
{
    a->pos = 0;
    a->held = 0;
    a->head = (a->head + 1) % SLOTS;
    pthread_mutex_lock(&a->mu);
    a->count--;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* Lend up to max bytes of the head slot: *data points at them until the next call, which
 * first takes the loan back (and gives the slot back to the thread once all of it was
 * lent). Returns 0 at the end of the stream. */
static size_t lend_async(async_reader *a, size_t max, const unsigned char **data)
{
    for (;;) {
        if (a->held) {
            a->held = 0;
            slot *sl = &a->slots[a->head];
            if (a->pos == sl->len) {
                if (sl->last)
                    a->done = 1; /* in->status is final: the thread wrote it before this slot */
                release_head(a);
            }
        }
        if (a->done)
            return 0;
        pthread_mutex_lock(&a->mu);
        while (a->count == 0)
            pthread_cond_wait(&a->cv, &a->mu);
        pthread_mutex_unlock(&a->mu);
        slot *sl = &a->slots[a->head];
        size_t k = sl->len - a->pos;
        if (k > max)
            k = max;
        a->raw_at = sl->raw_end;
        *data = sl->data + a->pos;
        a->pos += k;
        a->held = 1;
        if (k)
            return k;
    }
}

/* Drain the ring by copying what it lends. */
static size_t read_async(od_input *in, unsigned char *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        const unsigned char *d;
        size_t k = lend_async(in->async, n - done, &d);
        if (k == 0)
            break;
        memcpy(buf + done, d, k);
        done += k;
    }
    return done;
}

#define LEND_SIZE (256u * 1024u)

/* Tell the progress callback, every PROGRESS_STEP source bytes and once at the end. */
static size_t progressed(od_input *in, size_t got)
{
    if (!in->progress || in->progress_done)
        return got;
    uint64_t at = in->async ? in->async->raw_at : in->raw_offset;
    if (got == 0) {
        in->progress_done = 1;
        in->progress(in->progress_ctx, at, 1);
    } else if (at >= in->progress_next) {
        in->progress_next = at + PROGRESS_STEP;
        in->progress(in->progress_ctx, at, 0);
    }
    return got;
}

void od_input_set_progress(od_input *in, od_input_progress_fn fn, void *ctx)
{
    in->progress = fn;
    in->progress_ctx = ctx;
    in->progress_next = PROGRESS_STEP;
}

static size_t borrow(od_input *in, const unsigned char **data);

size_t od_input_borrow(od_input *in, const unsigned char **data)
{
    return progressed(in, borrow(in, data));
}

static size_t borrow(od_input *in, const unsigned char **data)
{
    size_t lim = in->chunk_limit ? in->chunk_limit : SIZE_MAX;
    if (in->rest)
        return borrow_resumed(in, data, lim);
    if (in->async)
        return lend_async(in->async, lim, data);
    if (in->mem && !in->gzip && in->raw_pos == in->raw_len) {
        /* Plain memory past the peeked bytes: all of the rest at once. */
        size_t k = in->mem_size - in->mem_pos;
        if (k > lim)
            k = lim;
        *data = in->mem + in->mem_pos;
        in->mem_pos += k;
        in->raw_offset += k;
        if (in->mem_pos == in->mem_size)
            in->eof = 1;
        return k;
    }
    if (!in->lend && !(in->lend = malloc(LEND_SIZE))) {
        if (in->status == OD_OK)
            in->status = od_fail(&in->err, OD_ERR_NOMEM, "out of memory");
        return 0;
    }
    *data = in->lend;
    return read_sync(in, in->lend, LEND_SIZE < lim ? LEND_SIZE : lim);
}

void od_input_limit_chunks(od_input *in, size_t max)
{
    in->chunk_limit = max;
}

size_t od_input_read(od_input *in, void *buf, size_t n)
{
    if (n == 0)
        return 0;
    if (in->rest) {
        size_t done = 0;
        for (int i = 0; i < 2 && done < n; i++) {
            size_t k = in->pre_len[i] < n - done ? in->pre_len[i] : n - done;
            if (k == 0)
                continue;
            memcpy((unsigned char *)buf + done, in->pre[i], k);
            in->pre[i] += k;
            in->pre_len[i] -= k;
            done += k;
        }
        return done < n ? done + od_input_read(in->rest, (unsigned char *)buf + done, n - done) : done;
    }
    if (in->async)
        return progressed(in, read_async(in, buf, n));
    return progressed(in, read_sync(in, buf, n));
}

od_status od_input_error(const od_input *in, od_error *err)
{
    if (in->rest)
        return od_input_error(in->rest, err);
    /* With a background reader the status is final (and safe to read) once the last
     * slot has been drained; before that no error has been seen by the caller. */
    if (in->async && !in->async->done)
        return OD_OK;
    if (in->status != OD_OK && err)
        *err = in->err;
    return in->status;
}

#define FINISH_MAX_BYTES (64u << 20)

od_status od_input_finish(od_input *in, od_error *err)
{
    if (in->rest) {
        in->pre_len[0] = in->pre_len[1] = 0;
        return od_input_finish(in->rest, err);
    }
    if (!in->gzip)
        return od_input_error(in, err);
    const unsigned char *d;
    uint64_t left = 0;
    size_t k;
    while ((k = od_input_borrow(in, &d)) > 0) {
        left += k;
        if (left > FINISH_MAX_BYTES) {
            uint64_t at = in->async ? in->async->raw_at : in->raw_offset;
            return od_fail_at(err, OD_ERR_FORMAT, at,
                              "more than 64 MiB of data after the end (compressed byte offset)");
        }
    }
    return od_input_error(in, err);
}

int od_input_is_gzip(const od_input *in)
{
    if (in->rest)
        return od_input_is_gzip(in->rest);
    return in->gzip;
}
