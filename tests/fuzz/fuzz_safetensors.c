/* fuzz_safetensors.c - a safetensors file's first bytes on arbitrary input: the header
 * length check, then the header itself as the data that follows it, at 4- and 8-bit
 * GPTQ packing. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "read/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_error err;
    uint64_t n;
    if (od_safetensors_header_length(data, size, &n, &err) != OD_OK)
        return 0;
    for (unsigned bits = 4; bits <= 8; bits += 4) {
        od_safetensors_totals t;
        memset(&t, 0, sizeof t);
        (void)od_safetensors_add_header((const char *)data + 8, (size_t)n, size - 8 - n, bits,
                                        &t, &err);
    }
    return 0;
}
