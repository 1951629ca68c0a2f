/* prom.c - HTTP request head parsing and Prometheus text exposition. */
#include "render/prom.h"
#include "base/textsafe.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tchar(unsigned char c)
{
    /* RFC 9110 token characters: what a method may be made of. */
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

od_status od_http_parse_request(const char *buf, size_t len, od_http_request *req,
                                int *complete, od_error *err)
{
    memset(req, 0, sizeof *req);
    *complete = 0;
    size_t i = 0;
    /* Request line: METHOD SP TARGET SP HTTP/1.x CRLF (a lone LF is tolerated). */
    size_t m = 0;
    while (i < len && tchar((unsigned char)buf[i])) {
        if (m + 1 >= sizeof req->method)
            return od_fail_at(err, OD_ERR_FORMAT, i, "HTTP method longer than %zu bytes", sizeof req->method - 1);
        req->method[m++] = buf[i++];
    }
    if (i == len)
        goto incomplete;
    if (m == 0 || buf[i] != ' ')
        return od_fail_at(err, OD_ERR_FORMAT, i, "expected an HTTP method followed by a space");
    i++;
    size_t p = 0;
    int in_query = 0;
    while (i < len && buf[i] != ' ') {
        unsigned char c = (unsigned char)buf[i];
        if (c <= 0x20 || c >= 0x7f)
            return od_fail_at(err, OD_ERR_FORMAT, i, "expected a request target (printable ASCII)");
        if (c == '?')
            in_query = 1;
        if (!in_query) {
            if (p + 1 >= sizeof req->path)
                return od_fail_at(err, OD_ERR_FORMAT, i, "request target longer than %zu bytes", sizeof req->path - 1);
            req->path[p++] = (char)c;
        }
        i++;
    }
    if (i == len)
        goto incomplete;
    if (p == 0)
        return od_fail_at(err, OD_ERR_FORMAT, i, "expected a request target");
    i++;
    static const char ver[] = "HTTP/1.";
    for (size_t k = 0; k < sizeof ver - 1; k++, i++) {
        if (i == len)
            goto incomplete;
        if (buf[i] != ver[k])
            return od_fail_at(err, OD_ERR_FORMAT, i, "expected HTTP/1.0 or HTTP/1.1");
    }
    if (i == len)
        goto incomplete;
    if (buf[i] != '0' && buf[i] != '1')
        return od_fail_at(err, OD_ERR_FORMAT, i, "expected HTTP/1.0 or HTTP/1.1");
    req->minor = buf[i++] - '0';
    if (i < len && buf[i] == '\r')
        i++;
    if (i == len)
        goto incomplete;
    if (buf[i] != '\n')
        return od_fail_at(err, OD_ERR_FORMAT, i, "expected the end of the request line");
    i++;
    /* Header lines up to an empty line. Their content does not matter to us; they must
     * only be text lines. */
    for (;;) {
        size_t start = i;
        while (i < len && buf[i] != '\n') {
            if (i >= OD_HTTP_MAX_HEAD)
                return od_fail_at(err, OD_ERR_FORMAT, OD_HTTP_MAX_HEAD, "request head longer than %d bytes", OD_HTTP_MAX_HEAD);
            unsigned char c = (unsigned char)buf[i];
            if (c == 0 || (c < 0x20 && c != '\t' && c != '\r'))
                return od_fail_at(err, OD_ERR_FORMAT, i, "control byte 0x%02x in a header line", c);
            i++;
        }
        if (i >= OD_HTTP_MAX_HEAD)
            return od_fail_at(err, OD_ERR_FORMAT, OD_HTTP_MAX_HEAD, "request head longer than %d bytes", OD_HTTP_MAX_HEAD);
        if (i == len)
            goto incomplete;
        size_t l = i - start;
        i++;
        if (l == 0 || (l == 1 && buf[start] == '\r')) {
            *complete = 1;
            return OD_OK;
        }
        if (buf[start] != ' ' && buf[start] != '\t' && !memchr(buf + start, ':', l))
            return od_fail_at(err, OD_ERR_FORMAT, start, "expected a header line 'Name: value'");
    }
incomplete:
    if (len >= OD_HTTP_MAX_HEAD)
        return od_fail_at(err, OD_ERR_FORMAT, OD_HTTP_MAX_HEAD, "request head longer than %d bytes", OD_HTTP_MAX_HEAD);
    return OD_OK;
}

void od_promtext_init(od_promtext *p)
{
    memset(p, 0, sizeof *p);
}

void od_promtext_free(od_promtext *p)
{
    free(p->data);
    memset(p, 0, sizeof *p);
}

static void put(od_promtext *p, const char *s, size_t n)
{
    if (p->oom)
        return;
    if (p->len + n + 1 > p->cap) {
        size_t nc = p->cap ? p->cap : 4096;
        while (nc < p->len + n + 1)
            nc *= 2;
        char *nd = realloc(p->data, nc);
        if (!nd) {
            p->oom = 1;
            return;
        }
        p->data = nd;
        p->cap = nc;
    }
    memcpy(p->data + p->len, s, n);
    p->len += n;
    p->data[p->len] = 0;
}

static void puts_(od_promtext *p, const char *s)
{
    put(p, s, strlen(s));
}

void od_prom_family(od_promtext *p, const char *name, const char *help, const char *type)
{
    puts_(p, "# HELP ");
    puts_(p, name);
    puts_(p, " ");
    /* HELP text escapes only backslash and newline. */
    for (const char *c = help; *c; c++)
        if (*c == '\\')
            puts_(p, "\\\\");
        else if (*c == '\n')
            puts_(p, "\\n");
        else
            put(p, c, 1);
    puts_(p, "\n# TYPE ");
    puts_(p, name);
    puts_(p, " ");
    puts_(p, type);
    puts_(p, "\n");
}

void od_prom_sample(od_promtext *p, const char *name, const char *const *labels,
                    size_t n_labels, double value)
{
    puts_(p, name);
    if (n_labels) {
        puts_(p, "{");
        for (size_t i = 0; i < n_labels; i++) {
            if (i)
                puts_(p, ",");
            puts_(p, labels[2 * i]);
            puts_(p, "=\"");
            /* The format is UTF-8: a byte that is not (a name from NVML) becomes U+FFFD. */
            const char *v = labels[2 * i + 1];
            size_t vl = strlen(v);
            for (size_t k = 0; k < vl;) {
                uint32_t cp;
                size_t m = od_utf8_decode(v + k, vl - k, &cp);
                if (!m) {
                    puts_(p, "\xef\xbf\xbd");
                    k++;
                    continue;
                }
                if (cp == '\\')
                    puts_(p, "\\\\");
                else if (cp == '"')
                    puts_(p, "\\\"");
                else if (cp == '\n')
                    puts_(p, "\\n");
                else
                    put(p, v + k, m);
                k += m;
            }
            puts_(p, "\"");
        }
        puts_(p, "}");
    }
    char num[64];
    if (isnan(value))
        snprintf(num, sizeof num, "NaN");
    else if (isinf(value))
        snprintf(num, sizeof num, value > 0 ? "+Inf" : "-Inf");
    else if (value == floor(value) && fabs(value) < 9007199254740992.0)
        snprintf(num, sizeof num, "%.0f", value); /* exact below 2^53 */
    else
        snprintf(num, sizeof num, "%.17g", value);
    puts_(p, " ");
    puts_(p, num);
    puts_(p, "\n");
}
