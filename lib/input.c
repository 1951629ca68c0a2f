/* input.c - streaming input with transparent gzip (zlib). */
#include "input.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define RAW_CHUNK (64u * 1024u)

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
};

static size_t raw_read(od_input *in, unsigned char *buf, size_t n)
{
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

od_status od_input_open_file(FILE *f, od_input **out, od_error *err)
{
    od_input *in = calloc(1, sizeof *in);
    if (!in)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    in->file = f;
    return start(in, out, err);
}

od_status od_input_open_memory(const void *data, size_t size, od_input **out, od_error *err)
{
    od_input *in = calloc(1, sizeof *in);
    if (!in)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    in->mem = data;
    in->mem_size = size;
    in->eof = size == 0;
    return start(in, out, err);
}

void od_input_close(od_input *in)
{
    if (!in)
        return;
    if (in->z_ready)
        inflateEnd(&in->z);
    free(in->raw);
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
        if (in->raw_pos == in->raw_len) {
            if (in->eof)
                break;
            in->raw_len = raw_read(in, in->raw, RAW_CHUNK);
            in->raw_pos = 0;
            if (in->raw_len == 0)
                break;
        }
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
            in->status = od_fail_at(&in->err, OD_ERR_FORMAT, at,
                                    "corrupt gzip data (compressed byte offset): %s",
                                    in->z.msg ? in->z.msg : "inflate failed");
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

size_t od_input_read(od_input *in, void *buf, size_t n)
{
    if (in->status != OD_OK || n == 0)
        return 0;
    return in->gzip ? read_gzip(in, buf, n) : read_plain(in, buf, n);
}

od_status od_input_error(const od_input *in, od_error *err)
{
    if (in->status != OD_OK && err)
        *err = in->err;
    return in->status;
}

int od_input_is_gzip(const od_input *in)
{
    return in->gzip;
}

uint64_t od_input_raw_offset(const od_input *in)
{
    return in->raw_offset;
}
