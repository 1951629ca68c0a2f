/* fuzz_gguf.c - a GGUF header on arbitrary bytes: parsed as a whole file and as a prefix
 * of a larger one (the parser then asks for more); a parsed header's metadata is read as
 * a config too. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "read/gguf.h"
#include "read/hfconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_gguf *g = malloc(sizeof *g);
    if (!g)
        return 0;
    od_error err;
    if (od_gguf_parse(data, size, size, g, &err) == OD_OK && !g->need_bytes) {
        od_model m;
        (void)od_hfconfig_parse(g->config, strlen(g->config), &m, &err);
    }
    (void)od_gguf_parse(data, size, (uint64_t)size * 2 + 64, g, &err);
    free(g);
    return 0;
}
