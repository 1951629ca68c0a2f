/* fuzz_http_request.c - the HTTP request head parser of the Prometheus endpoint
 * (lib/render/prom.h): any bytes, fed whole and in every prefix a slow client could send, give
 * "incomplete", a request, or a format error with an offset inside the head - never a
 * crash. */
#include <stdint.h>
#include <string.h>

#include "render/prom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_http_request req;
    od_error err;
    int complete;
    size_t step = size > 64 ? size / 64 : 1;
    for (size_t n = 0; n <= size; n += step) {
        od_status st = od_http_parse_request((const char *)data, n, &req, &complete, &err);
        if (st == OD_OK && complete) {
            if (!req.method[0] || req.path[0] == 0 || strlen(req.path) >= sizeof req.path)
                __builtin_trap();
        } else if (st != OD_OK && (!err.has_offset || err.offset > OD_HTTP_MAX_HEAD)) {
            __builtin_trap();
        }
    }
    return 0;
}
