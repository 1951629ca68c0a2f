/* test_nvml.c - the NVML module against the fake libnvidia-ml.so.1 built beside this test
 * (tests/fakenvml), in its current-driver and old-driver builds, and against libraries
 * that are missing or not NVML at all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read/nvml.h"

static char fake[4096], fake_old[4096], script[64];

static void write_script(const char *text)
{
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    setenv("OOMDOC_FAKENVML_SCRIPT", script, 1);
}

/* The H200 of tests/data: total and driver reserve from nvml_before_torch; used is the
 * leak run's last nvml_series value. */
static const char *h200 =
    "device 150754820096 644939776 GPU-5d3b7a2e NVIDIA H200\n"
    "sample 0 0 17351704576 101=16706764800 102=? 103=1\n"
    "sample 0 5 17351704576 101=16706764800 102=? 103=1 104=1 105=1 106=1 107=1 108=1 109=1 110=1\n";

static void memory_v2_excludes_reserve(void **state)
{
    (void)state;
    write_script(h200);
    od_nvml *n;
    od_error err;
    assert_int_equal(od_nvml_open(fake, &n, &err), OD_OK);
    unsigned count;
    assert_int_equal(od_nvml_device_count(n, &count, &err), OD_OK);
    assert_int_equal(count, 1);
    od_nvml_device d;
    assert_int_equal(od_nvml_device_get(n, 0, &d, &err), OD_OK);
    char name[96], uuid[96];
    assert_int_equal(od_nvml_device_name(n, d, name, sizeof name, &err), OD_OK);
    assert_string_equal(name, "NVIDIA H200");
    assert_int_equal(od_nvml_device_uuid(n, d, uuid, sizeof uuid, &err), OD_OK);
    assert_string_equal(uuid, "GPU-5d3b7a2e");
    od_nvml_memory m;
    assert_int_equal(od_nvml_memory_info(n, d, &m, &err), OD_OK);
    assert_int_equal(m.version, 2);
    assert_true(m.total_bytes == 150754820096ull);
    assert_true(m.reserved_bytes == 644939776ull);
    assert_true(m.used_bytes == 17351704576ull - 644939776ull);
    assert_true(m.free_bytes == 150754820096ull - 17351704576ull);
    od_nvml_process p[4];
    size_t np;
    int more;
    assert_int_equal(od_nvml_processes(n, d, p, 4, &np, &more, &err), OD_OK);
    assert_int_equal(np, 3);
    assert_false(more);
    assert_int_equal(p[0].pid, 101);
    assert_true(p[0].used_bytes == 16706764800ull);
    assert_true(p[1].used_bytes == OD_NVML_BYTES_UNKNOWN);
    assert_int_equal(od_nvml_device_get(n, 1, &d, &err), OD_ERR_ARG);
    assert_false(od_nvml_device_lost(n));
    od_nvml_close(n);
}

static void old_driver_falls_back_to_v1(void **state)
{
    (void)state;
    write_script(h200);
    od_nvml *n;
    od_error err;
    assert_int_equal(od_nvml_open(fake_old, &n, &err), OD_OK);
    od_nvml_device d;
    assert_int_equal(od_nvml_device_get(n, 0, &d, &err), OD_OK);
    od_nvml_memory m;
    assert_int_equal(od_nvml_memory_info(n, d, &m, &err), OD_OK);
    assert_int_equal(m.version, 1);
    assert_true(m.used_bytes == 17351704576ull); /* v1: reserve included */
    assert_true(m.reserved_bytes == 0);
    od_nvml_process p[2];
    size_t np;
    int more;
    assert_int_equal(od_nvml_processes(n, d, p, 2, &np, &more, &err), OD_OK);
    assert_int_equal(np, 2);
    assert_true(more);
    assert_int_equal(p[0].pid, 101);
    assert_true(p[0].used_bytes == 16706764800ull);
    assert_int_equal(p[0].gpu_instance_id, UINT32_MAX);
    int mig;
    assert_int_equal(od_nvml_mig_mode(n, d, &mig, &err), OD_OK);
    assert_false(mig);
    od_nvml_close(n);
}

static void refused_newer_calls_fall_back(void **state)
{
    (void)state;
    /* A driver exporting the _v2 calls but answering NOT_SUPPORTED, with 10 processes
     * (more than the initial buffer: the buffer must grow). */
    write_script("api v1 v1\nspeed 1000\n"
                 "device 1000 100 GPU-x X\n"
                 "sample 0 0 600 1=1 2=2 3=3 4=4 5=5 6=6 7=7 8=8 9=9 10=10\n");
    od_nvml *n;
    od_error err;
    assert_int_equal(od_nvml_open(fake, &n, &err), OD_OK);
    od_nvml_device d;
    assert_int_equal(od_nvml_device_get(n, 0, &d, &err), OD_OK);
    od_nvml_memory m;
    for (int i = 0; i < 2; i++) { /* second time: the refusal is remembered */
        assert_int_equal(od_nvml_memory_info(n, d, &m, &err), OD_OK);
        assert_int_equal(m.version, 1);
        assert_true(m.used_bytes == 600);
    }
    od_nvml_process p[16];
    size_t np;
    assert_int_equal(od_nvml_processes(n, d, p, 16, &np, NULL, &err), OD_OK);
    assert_int_equal(np, 10);
    assert_int_equal(p[9].pid, 10);
    assert_true(p[9].used_bytes == 10);
    od_nvml_close(n);
}

static void lost_gpu_is_reported(void **state)
{
    (void)state;
    write_script("after_end lost\nspeed 1000000\n"
                 "device 1000 100 GPU-x X\nsample 0 0 600\nsample 0 0.001 700\n");
    od_nvml *n;
    od_error err;
    assert_int_equal(od_nvml_open(fake, &n, &err), OD_OK);
    od_nvml_device d;
    assert_int_equal(od_nvml_device_get(n, 0, &d, &err), OD_OK);
    usleep(20000); /* 20 ms x 1e6 = far past the last sample */
    od_nvml_memory m;
    assert_int_equal(od_nvml_memory_info(n, d, &m, &err), OD_ERR_NODEV);
    assert_true(od_nvml_device_lost(n));
    assert_non_null(strstr(err.msg, "GPU is lost"));
    od_nvml_close(n);
}

static void mig_instances_are_listed(void **state)
{
    (void)state;
    write_script("device 85899345920 0 GPU-a A100\n"
                 "mig 0 42949672960 1024 MIG-1 A100 MIG 3g.40gb\n"
                 "mig 0 42949672960 0 MIG-2 A100 MIG 3g.40gb\n");
    od_nvml *n;
    od_error err;
    assert_int_equal(od_nvml_open(fake, &n, &err), OD_OK);
    od_nvml_device d, migs[4];
    assert_int_equal(od_nvml_device_get(n, 0, &d, &err), OD_OK);
    int mig;
    assert_int_equal(od_nvml_mig_mode(n, d, &mig, &err), OD_OK);
    assert_true(mig);
    size_t k;
    assert_int_equal(od_nvml_mig_devices(n, d, migs, 4, &k, &err), OD_OK);
    assert_int_equal(k, 2);
    char uuid[32];
    assert_int_equal(od_nvml_device_uuid(n, migs[1], uuid, sizeof uuid, &err), OD_OK);
    assert_string_equal(uuid, "MIG-2");
    od_nvml_memory m;
    assert_int_equal(od_nvml_memory_info(n, migs[0], &m, &err), OD_OK);
    assert_true(m.used_bytes == 1024 && m.total_bytes == 42949672960ull);
    od_nvml_close(n);
}

static void unavailable_is_nodev(void **state)
{
    (void)state;
    od_nvml *n = (od_nvml *)1;
    od_error err;
    assert_int_equal(od_nvml_open("./no/such/libnvidia-ml.so.1", &n, &err), OD_ERR_NODEV);
    assert_null(n);
    assert_non_null(strstr(err.msg, "cannot load NVML"));
    /* A real shared library that is not NVML. */
    assert_int_equal(od_nvml_open("libz.so.1", &n, &err), OD_ERR_NODEV);
    assert_non_null(strstr(err.msg, "not a usable NVML library"));
    /* The driver not loaded: nvmlInit fails. */
    unsetenv("OOMDOC_FAKENVML_SCRIPT");
    assert_int_equal(od_nvml_open(fake, &n, &err), OD_ERR_NODEV);
    assert_non_null(strstr(err.msg, "Driver Not Loaded"));
    od_nvml_close(NULL);
}

int main(int argc, char **argv)
{
    (void)argc;
    char self[4096];
    snprintf(self, sizeof self, "%s", argv[0]);
    char *dir = dirname(self);
    snprintf(fake, sizeof fake, "%s/fakenvml/libnvidia-ml.so.1", dir);
    snprintf(fake_old, sizeof fake_old, "%s/fakenvml-old/libnvidia-ml.so.1", dir);
    /* dlopen needs a slash to take a path literally. */
    if (!strchr(fake, '/'))
        return 1;
    snprintf(script, sizeof script, "/tmp/test_nvml_XXXXXX");
    int fd = mkstemp(script);
    if (fd < 0)
        return 1;
    close(fd);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(memory_v2_excludes_reserve),
        cmocka_unit_test(old_driver_falls_back_to_v1),
        cmocka_unit_test(refused_newer_calls_fall_back),
        cmocka_unit_test(lost_gpu_is_reported),
        cmocka_unit_test(mig_instances_are_listed),
        cmocka_unit_test(unavailable_is_nodev),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(script);
    return rc;
}
