/* jsonstr.h - a JSON string of bytes that may not be UTF-8 (frame strings of a snapshot,
 * lines of a pasted log): valid UTF-8 as it is, else each bad byte replaced by U+FFFD
 * (base/textsafe.h), so that a document never loses a string (jansson refuses invalid
 * UTF-8 and gives NULL, which drops the key or the element it was for). */
#ifndef OD_JSONSTR_H
#define OD_JSONSTR_H

#include <jansson.h>

/* A new reference; json null for NULL (and when out of memory). */
json_t *od_json_string(const char *s);

#endif
