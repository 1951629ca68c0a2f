/* fakenvml.c - a stand-in libnvidia-ml.so.1 for the tests: it answers the NVML calls
 * oomdoc makes by playing back a script (script.h) named by the environment variable
 * OOMDOC_FAKENVML_SCRIPT. Without that variable nvmlInit fails as it does on a machine
 * whose driver is not loaded.
 *
 * Built twice: normally it exports every call oomdoc knows; with -DFAKE_OLD_DRIVER it
 * lacks nvmlDeviceGetMemoryInfo_v2, the _v2/_v3 process calls and MIG, like a driver
 * from before 2021, so that the dlsym fallbacks are exercised for real. */
#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nv_ret;
typedef struct {
    unsigned long long total, free, used;
} nv_memory_v1;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nv_memory_v2;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nv_process_v1;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nv_process_v2;

static fake_script S;
static int initialized;
static double t0;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

EXPORT nv_ret nvmlInit_v2(void);
EXPORT nv_ret nvmlInit_v2(void)
{
    if (initialized)
        return 0;
    const char *path = getenv("OOMDOC_FAKENVML_SCRIPT");
    if (!path || !path[0])
        return 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fakenvml: cannot open %s\n", path);
        return 999;
    }
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf)
        return 999;
    char err[200];
    int rc = fake_script_parse(buf, len, &S, err, sizeof err);
    free(buf);
    if (rc != 0) {
        fprintf(stderr, "fakenvml: %s: %s\n", path, err);
        fake_script_free(&S);
        return 999;
    }
    initialized = 1;
    t0 = now();
    return 0;
}

EXPORT nv_ret nvmlShutdown(void);
EXPORT nv_ret nvmlShutdown(void)
{
    if (!initialized)
        return 1;
    fake_script_free(&S);
    initialized = 0;
    return 0;
}

EXPORT const char *nvmlErrorString(nv_ret r);
EXPORT const char *nvmlErrorString(nv_ret r)
{
    switch (r) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 6: return "Not Found";
    case 7: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
    }
}

EXPORT nv_ret nvmlSystemGetDriverVersion(char *buf, unsigned len);
EXPORT nv_ret nvmlSystemGetDriverVersion(char *buf, unsigned len)
{
    if (!initialized)
        return 1;
    if (strlen(S.driver) + 1 > len)
        return 7;
    strcpy(buf, S.driver);
    return 0;
}

EXPORT nv_ret nvmlDeviceGetCount_v2(unsigned *count);
EXPORT nv_ret nvmlDeviceGetCount_v2(unsigned *count)
{
    if (!initialized)
        return 1;
    *count = (unsigned)S.n_devices;
    return 0;
}

EXPORT nv_ret nvmlDeviceGetHandleByIndex_v2(unsigned index, void **dev);
EXPORT nv_ret nvmlDeviceGetHandleByIndex_v2(unsigned index, void **dev)
{
    if (!initialized)
        return 1;
    if (index >= (unsigned)S.n_devices)
        return 2;
    *dev = &S.devices[index];
    return 0;
}

static int valid(void *h)
{
    if (!initialized || !h)
        return 0;
    fake_device *d = h;
    return (d >= S.devices && d < S.devices + S.n_devices) || (d >= S.migs && d < S.migs + S.n_migs);
}

static nv_ret copy_str(const char *s, char *buf, unsigned len)
{
    if (strlen(s) + 1 > len)
        return 7;
    strcpy(buf, s);
    return 0;
}

EXPORT nv_ret nvmlDeviceGetName(void *h, char *buf, unsigned len);
EXPORT nv_ret nvmlDeviceGetName(void *h, char *buf, unsigned len)
{
    return valid(h) ? copy_str(((fake_device *)h)->name, buf, len) : 2;
}

EXPORT nv_ret nvmlDeviceGetUUID(void *h, char *buf, unsigned len);
EXPORT nv_ret nvmlDeviceGetUUID(void *h, char *buf, unsigned len)
{
    return valid(h) ? copy_str(((fake_device *)h)->uuid, buf, len) : 2;
}

/* The sample in effect now, or NULL when the device is lost. */
static nv_ret current(fake_device *d, const fake_sample **out)
{
    *out = NULL;
    if (d->n_samples == 0)
        return 0;
    double t = (now() - t0) * S.speed;
    size_t lo = 0, hi = d->n_samples; /* first sample with time > t */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->samples[mid].t <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == d->n_samples && S.lost_after_end && t > d->samples[d->n_samples - 1].t)
        return 15; /* NVML_ERROR_GPU_IS_LOST */
    *out = &d->samples[lo ? lo - 1 : 0];
    return 0;
}

static nv_ret used_now(void *h, unsigned long long *used_v1)
{
    if (!valid(h))
        return 2;
    fake_device *d = h;
    if (d->is_mig) {
        *used_v1 = d->mig_used;
        return 0;
    }
    const fake_sample *s;
    nv_ret r = current(d, &s);
    if (r)
        return r;
    *used_v1 = s ? s->used : d->reserve;
    return 0;
}

EXPORT nv_ret nvmlDeviceGetMemoryInfo(void *h, nv_memory_v1 *m);
EXPORT nv_ret nvmlDeviceGetMemoryInfo(void *h, nv_memory_v1 *m)
{
    unsigned long long used;
    nv_ret r = used_now(h, &used);
    if (r)
        return r;
    fake_device *d = h;
    m->total = d->total;
    m->used = used;
    m->free = d->total - used;
    return 0;
}

#ifndef FAKE_OLD_DRIVER
EXPORT nv_ret nvmlDeviceGetMemoryInfo_v2(void *h, nv_memory_v2 *m);
EXPORT nv_ret nvmlDeviceGetMemoryInfo_v2(void *h, nv_memory_v2 *m)
{
    if (initialized && S.mem_api < 2)
        return 3;
    if (m->version != (unsigned)(sizeof(nv_memory_v2) | (2u << 24)))
        return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
    unsigned long long used;
    nv_ret r = used_now(h, &used);
    if (r)
        return r;
    fake_device *d = h;
    /* v2 reports the driver's reserve apart: `used` is what processes hold. */
    unsigned long long reserve = d->is_mig ? 0 : d->reserve;
    m->total = d->total;
    m->reserved = reserve;
    m->used = used - reserve;
    m->free = d->total - used;
    return 0;
}
#endif

/* Fill the process list in the given struct layout (v1 or v2/v3). */
static nv_ret procs(void *h, unsigned *count, void *infos, int v1)
{
    if (!valid(h))
        return 2;
    fake_device *d = h;
    const fake_sample *s = NULL;
    if (!d->is_mig) {
        nv_ret r = current(d, &s);
        if (r)
            return r;
    }
    size_t n = s ? s->proc_count : 0;
    if (*count < n) {
        *count = (unsigned)n;
        return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    }
    for (size_t i = 0; i < n; i++) {
        const fake_proc *p = &S.procs[s->proc_first + i];
        unsigned long long used = p->used == UINT64_MAX ? ~0ull : p->used;
        if (v1) {
            nv_process_v1 *o = (nv_process_v1 *)infos + i;
            o->pid = p->pid;
            o->usedGpuMemory = used;
        } else {
            nv_process_v2 *o = (nv_process_v2 *)infos + i;
            o->pid = p->pid;
            o->usedGpuMemory = used;
            o->gpuInstanceId = 0xffffffffu;
            o->computeInstanceId = 0xffffffffu;
        }
    }
    *count = (unsigned)n;
    return 0;
}

EXPORT nv_ret nvmlDeviceGetComputeRunningProcesses(void *h, unsigned *count, nv_process_v1 *p);
EXPORT nv_ret nvmlDeviceGetComputeRunningProcesses(void *h, unsigned *count, nv_process_v1 *p)
{
    if (initialized && S.procs_api < 1)
        return 3;
    return procs(h, count, p, 1);
}

#ifndef FAKE_OLD_DRIVER
EXPORT nv_ret nvmlDeviceGetComputeRunningProcesses_v2(void *h, unsigned *count, nv_process_v2 *p);
EXPORT nv_ret nvmlDeviceGetComputeRunningProcesses_v2(void *h, unsigned *count, nv_process_v2 *p)
{
    if (initialized && S.procs_api < 2)
        return 3;
    return procs(h, count, p, 0);
}

EXPORT nv_ret nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned *count, nv_process_v2 *p);
EXPORT nv_ret nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned *count, nv_process_v2 *p)
{
    if (initialized && S.procs_api < 3)
        return 3;
    return procs(h, count, p, 0);
}

EXPORT nv_ret nvmlDeviceGetMigMode(void *h, unsigned *cur, unsigned *pending);
EXPORT nv_ret nvmlDeviceGetMigMode(void *h, unsigned *cur, unsigned *pending)
{
    if (!valid(h) || ((fake_device *)h)->is_mig)
        return 2;
    *cur = *pending = ((fake_device *)h)->n_mig > 0;
    return 0;
}

EXPORT nv_ret nvmlDeviceGetMaxMigDeviceCount(void *h, unsigned *count);
EXPORT nv_ret nvmlDeviceGetMaxMigDeviceCount(void *h, unsigned *count)
{
    if (!valid(h) || ((fake_device *)h)->is_mig)
        return 2;
    *count = FAKE_MAX_MIG;
    return 0;
}

EXPORT nv_ret nvmlDeviceGetMigDeviceHandleByIndex(void *h, unsigned index, void **mig);
EXPORT nv_ret nvmlDeviceGetMigDeviceHandleByIndex(void *h, unsigned index, void **mig)
{
    if (!valid(h) || ((fake_device *)h)->is_mig)
        return 2;
    fake_device *d = h;
    if (index >= (unsigned)d->n_mig)
        return 6; /* NVML_ERROR_NOT_FOUND: an empty slot */
    *mig = d->migs[index];
    return 0;
}
#endif
