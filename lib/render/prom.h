/* prom.h - the two halves of a tiny metrics endpoint, without any I/O: parsing the head of
 * an HTTP/1.x request a scraper sends, and writing Prometheus' text exposition format
 * (version 0.0.4: "# HELP", "# TYPE", then `name{label="value"} number` lines).
 *
 * Ownership: od_promtext owns its buffer; free it with od_promtext_free. */
#ifndef OD_PROM_H
#define OD_PROM_H

#include "oomdoc/od.h"

/* Longest request head accepted; a scraper's is a few hundred bytes. */
#define OD_HTTP_MAX_HEAD 8192

typedef struct {
    char method[16];
    char path[256]; /* the request target without its query string */
    int minor;      /* HTTP/1.minor */
} od_http_request;

/* Parse buf[0..len), the bytes received so far. OD_OK with *complete = 0: the head has not
 * ended yet (read more); OD_OK with *complete = 1: *req is filled. OD_ERR_FORMAT with the
 * byte offset when the bytes cannot be an HTTP/1.x request head (or exceed
 * OD_HTTP_MAX_HEAD). */
od_status od_http_parse_request(const char *buf, size_t len, od_http_request *req,
                                int *complete, od_error *err);

typedef struct {
    char *data;
    size_t len, cap;
    int oom; /* an allocation failed: the text is incomplete */
} od_promtext;

void od_promtext_init(od_promtext *p);
void od_promtext_free(od_promtext *p);
/* "# HELP name help\n# TYPE name type\n"; type is "gauge" or "counter". */
void od_prom_family(od_promtext *p, const char *name, const char *help, const char *type);
/* One sample: name{k1="v1",...} value. labels: n_labels key/value pairs (values escaped
 * as the format requires). Infinities are written +Inf / -Inf, integers exactly. */
void od_prom_sample(od_promtext *p, const char *name, const char *const *labels,
                    size_t n_labels, double value);

#endif
