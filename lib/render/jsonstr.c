/* jsonstr.c - JSON strings of untrusted bytes (see jsonstr.h). */
#include "render/jsonstr.h"

#include <stdlib.h>
#include <string.h>

#include "base/textsafe.h"

json_t *od_json_string(const char *s)
{
    if (!s)
        return json_null();
    size_t n = strlen(s);
    if (od_utf8_valid(s, n))
        return json_stringn(s, n);
    size_t need = od_utf8_sanitize(s, n, NULL, 0) + 1;
    char *b = malloc(need);
    if (!b)
        return json_null();
    od_utf8_sanitize(s, n, b, need);
    json_t *j = json_stringn(b, need - 1);
    free(b);
    return j;
}
