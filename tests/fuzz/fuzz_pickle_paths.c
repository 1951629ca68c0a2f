/* fuzz_pickle_paths.c - libFuzzer target: the pickle reader's one-step paths for dicts and
 * lists must give exactly what running each opcode on its own gives (tree, hook calls,
 * status, error offset and message) on any input, whether it arrives whole or in small
 * chunks. Its corpus is the reader's. */
#include <stdint.h>
#include <stdlib.h>

#include "../unit/pickle_paths.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The last byte picks how the input arrives: whole, or in chunks of 1..32 bytes. */
    size_t chunk = size && data[size - 1] < 128 ? 1 + data[size - 1] % 32 : 0;
    if (pp_compare(data, size, chunk) != 0)
        abort();
    return 0;
}
