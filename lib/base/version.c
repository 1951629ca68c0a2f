/* version.c - the library's version string, for callers that link liboomdoc. */
#include "oomdoc/od.h"

OD_API const char *od_version(void);

/* The release this library was built from ("0.1.0"); a static string, never freed. */
const char *od_version(void)
{
    return OD_VERSION;
}
