/* fuzz_pickle_paths.c - libFuzzer target: the pickle reader's one-step paths for dicts and
 * lists must give exactly what running each opcode on its own gives (tree, hook calls,
 * status, error offset and message) on any input. Its corpus is the reader's. */
#include <stdint.h>
#include <stdlib.h>

#include "../unit/pickle_paths.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (pp_compare(data, size) != 0)
        abort();
    return 0;
}
