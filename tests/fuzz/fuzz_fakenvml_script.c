/* fuzz_fakenvml_script.c - the test-only playback script parser of the fake NVML library
 * (tests/fakenvml/script.c): any bytes give 0 or a "byte N: ..." message, never a crash. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../fakenvml/script.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fake_script s; /* large: keep it off the stack */
    char err[200];
    int rc = fake_script_parse((const char *)data, size, &s, err, sizeof err);
    if (rc != 0 && strncmp(err, "byte ", 5) != 0)
        __builtin_trap(); /* every failure names its offset */
    fake_script_free(&s);
    return 0;
}
