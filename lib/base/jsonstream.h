/* jsonstream.h - a pull reader for JSON read from an od_input, a value at a time, so that
 * documents of hundreds of MB (profiler traces) are never held whole. The caller walks the
 * structure it expects (object keys, array elements, scalars) and skips the rest.
 *
 * Offsets are byte positions in the (uncompressed) stream. Every failure fills the
 * od_error with the offset and what was expected, and the reader stays failed: later calls
 * return the same status.
 *
 * od_js_open borrows the input (the caller still closes it); od_js_close frees the reader
 * (NULL is fine). Strings returned by od_js_string stay valid until the next call. */
#ifndef OD_JSONSTREAM_H
#define OD_JSONSTREAM_H

#include <stdint.h>

#include "oomdoc/input.h"
#include "oomdoc/od.h"

typedef struct od_js od_js;

/* The kind of the next value, without consuming it. */
typedef enum {
    OD_JS_EOF, OD_JS_OBJECT, OD_JS_ARRAY, OD_JS_STRING, OD_JS_NUMBER, OD_JS_TRUE,
    OD_JS_FALSE, OD_JS_NULL, OD_JS_BAD
} od_js_kind;

/* A number as written: is_int when it had no fraction or exponent and fits int64;
 * milli is value x 1000 rounded (exact for up to three decimals: profiler timestamps in
 * microseconds with nanosecond decimals). */
typedef struct {
    double value;
    int is_int;
    int64_t i;
    int64_t milli;
    int milli_ok;
} od_js_number;

/* prefix: bytes already read from in (kind detection), consumed first; at most 64 KiB. */
od_status od_js_open(od_input *in, const void *prefix, size_t prefix_len, od_js **out, od_error *err);
void od_js_close(od_js *js);

/* Offset of the next unread byte. */
uint64_t od_js_offset(const od_js *js);
/* Kind of the next value (skips white space). */
od_js_kind od_js_peek(od_js *js);

/* Containers: begin consumes '{' or '['. next returns 1 while there is another member
 * (for objects it also reads the key and the ':' into *key), 0 at the closing bracket
 * (consumed), -1 on error. */
od_status od_js_begin_object(od_js *js, od_error *err);
int od_js_next_key(od_js *js, const char **key, size_t *key_len, od_error *err);
od_status od_js_begin_array(od_js *js, od_error *err);
int od_js_next_element(od_js *js, od_error *err);

od_status od_js_string(od_js *js, const char **s, size_t *len, od_error *err);
od_status od_js_number_read(od_js *js, od_js_number *n, od_error *err);
/* Skip one value of any kind (iteratively: nesting cannot overflow the stack). */
od_status od_js_skip(od_js *js, od_error *err);
/* Succeeds when only white space remains. */
od_status od_js_end(od_js *js, od_error *err);

#endif
