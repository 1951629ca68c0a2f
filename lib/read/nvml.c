/* nvml.c - NVML through dlopen: our own declarations of NVML's public C ABI. */
#include "read/nvml.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* NVML's ABI, as documented in nvml.h of the CUDA toolkit / GDK. Only what we call. */
typedef int nv_ret; /* nvmlReturn_t */
typedef void *nv_dev; /* nvmlDevice_t */
enum {
    NV_SUCCESS = 0,
    NV_ERROR_UNINITIALIZED = 1,
    NV_ERROR_INVALID_ARGUMENT = 2,
    NV_ERROR_NOT_SUPPORTED = 3,
    NV_ERROR_NOT_FOUND = 6,
    NV_ERROR_INSUFFICIENT_SIZE = 7,
    NV_ERROR_DRIVER_NOT_LOADED = 9,
    NV_ERROR_LIBRARY_NOT_FOUND = 12,
    NV_ERROR_FUNCTION_NOT_FOUND = 13,
    NV_ERROR_GPU_IS_LOST = 15,
    NV_ERROR_RESET_REQUIRED = 16,
    NV_ERROR_ARGUMENT_VERSION_MISMATCH = 25
};

typedef struct {
    unsigned long long total, free, used;
} nv_memory_v1;

typedef struct {
    unsigned int version; /* NVML_STRUCT_VERSION(Memory, 2) */
    unsigned long long total, reserved, free, used;
} nv_memory_v2;
#define NV_MEMORY_V2_VERSION ((unsigned int)(sizeof(nv_memory_v2) | (2u << 24)))

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nv_process_v1;

/* Same layout for _v2 and _v3 (v3 changed what is reported, not the struct). */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nv_process_v2;

#define NV_VALUE_NOT_AVAILABLE (~0ull)

struct od_nvml {
    void *dl;
    nv_ret (*init)(void);
    nv_ret (*shutdown)(void);
    const char *(*error_string)(nv_ret);
    nv_ret (*driver_version)(char *, unsigned);
    nv_ret (*count)(unsigned *);
    nv_ret (*by_index)(unsigned, nv_dev *);
    nv_ret (*name)(nv_dev, char *, unsigned);
    nv_ret (*uuid)(nv_dev, char *, unsigned);
    nv_ret (*mem_v1)(nv_dev, nv_memory_v1 *);
    nv_ret (*mem_v2)(nv_dev, nv_memory_v2 *);
    nv_ret (*procs_v1)(nv_dev, unsigned *, nv_process_v1 *);
    nv_ret (*procs_v2)(nv_dev, unsigned *, nv_process_v2 *);
    nv_ret (*procs_v3)(nv_dev, unsigned *, nv_process_v2 *);
    nv_ret (*mig_mode)(nv_dev, unsigned *, unsigned *);
    nv_ret (*mig_max)(nv_dev, unsigned *);
    nv_ret (*mig_by_index)(nv_dev, unsigned, nv_dev *);
    int no_mem_v2, no_procs_v3, no_procs_v2; /* learnt: the driver refused the newer call */
    nv_ret last;
    /* Reused between calls so that sampling every 100 ms does not allocate. */
    nv_process_v2 *pbuf;
    size_t pbuf_cap;
};

static const char *errstr(od_nvml *n, nv_ret r)
{
    const char *s = n->error_string ? n->error_string(r) : NULL;
    return s && s[0] ? s : "unknown NVML error";
}

static od_status nvfail(od_nvml *n, nv_ret r, const char *what, od_error *err)
{
    n->last = r;
    od_status st = r == NV_ERROR_INVALID_ARGUMENT ? OD_ERR_ARG : OD_ERR_NODEV;
    return od_fail(err, st, "NVML %s: %s (error %d)", what, errstr(n, r), r);
}

/* A newer entry point the driver does not implement: fall back to the older one. */
static int unsupported(nv_ret r)
{
    return r == NV_ERROR_NOT_SUPPORTED || r == NV_ERROR_FUNCTION_NOT_FOUND ||
           r == NV_ERROR_ARGUMENT_VERSION_MISMATCH;
}

#define SYM(field, name) (*(void **)&n->field = dlsym(n->dl, name))

od_status od_nvml_open(const char *lib_path, od_nvml **out, od_error *err)
{
    *out = NULL;
    const char *path = lib_path && lib_path[0] ? lib_path : "libnvidia-ml.so.1";
    od_nvml *n = calloc(1, sizeof *n);
    if (!n)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    /* RTLD_LOCAL: NVML's symbols stay out of the global namespace. */
    n->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!n->dl) {
        free(n);
        return od_fail(err, OD_ERR_NODEV,
                       "cannot load NVML (%s): no NVIDIA driver on this machine?", path);
    }
    /* Every driver of the last decade has nvmlInit_v2 and the _v2 device calls; the
     * unsuffixed ones are the fallback for anything older. */
    if (!SYM(init, "nvmlInit_v2"))
        SYM(init, "nvmlInit");
    SYM(shutdown, "nvmlShutdown");
    SYM(error_string, "nvmlErrorString");
    SYM(driver_version, "nvmlSystemGetDriverVersion");
    if (!SYM(count, "nvmlDeviceGetCount_v2"))
        SYM(count, "nvmlDeviceGetCount");
    if (!SYM(by_index, "nvmlDeviceGetHandleByIndex_v2"))
        SYM(by_index, "nvmlDeviceGetHandleByIndex");
    SYM(name, "nvmlDeviceGetName");
    SYM(uuid, "nvmlDeviceGetUUID");
    SYM(mem_v1, "nvmlDeviceGetMemoryInfo");
    SYM(mem_v2, "nvmlDeviceGetMemoryInfo_v2");
    SYM(procs_v1, "nvmlDeviceGetComputeRunningProcesses");
    SYM(procs_v2, "nvmlDeviceGetComputeRunningProcesses_v2");
    SYM(procs_v3, "nvmlDeviceGetComputeRunningProcesses_v3");
    SYM(mig_mode, "nvmlDeviceGetMigMode");
    SYM(mig_max, "nvmlDeviceGetMaxMigDeviceCount");
    SYM(mig_by_index, "nvmlDeviceGetMigDeviceHandleByIndex");
    if (!n->init || !n->shutdown || !n->count || !n->by_index || !n->mem_v1) {
        dlclose(n->dl);
        free(n);
        return od_fail(err, OD_ERR_NODEV, "%s is not a usable NVML library (missing nvmlInit, "
                       "nvmlDeviceGetCount or nvmlDeviceGetMemoryInfo)", path);
    }
    nv_ret r = n->init();
    if (r != NV_SUCCESS) {
        od_status st = od_fail(err, OD_ERR_NODEV, "NVML cannot start: %s (error %d)%s",
                               errstr(n, r), r,
                               r == NV_ERROR_DRIVER_NOT_LOADED ? ": is the NVIDIA driver loaded?" : "");
        dlclose(n->dl);
        free(n);
        return st;
    }
    *out = n;
    return OD_OK;
}

void od_nvml_close(od_nvml *n)
{
    if (!n)
        return;
    n->shutdown();
    dlclose(n->dl);
    free(n->pbuf);
    free(n);
}

void od_nvml_driver_version(od_nvml *n, char *buf, size_t size)
{
    if (size == 0)
        return;
    buf[0] = 0;
    if (n->driver_version && size <= 0xffffffffu && n->driver_version(buf, (unsigned)size) != NV_SUCCESS)
        buf[0] = 0;
    buf[size - 1] = 0;
}

od_status od_nvml_device_count(od_nvml *n, unsigned *count, od_error *err)
{
    *count = 0;
    nv_ret r = n->count(count);
    if (r != NV_SUCCESS)
        return nvfail(n, r, "device count", err);
    return OD_OK;
}

od_status od_nvml_device_get(od_nvml *n, unsigned index, od_nvml_device *dev, od_error *err)
{
    nv_dev h = NULL;
    nv_ret r = n->by_index(index, &h);
    if (r != NV_SUCCESS)
        return nvfail(n, r, "device handle", err);
    dev->handle = h;
    return OD_OK;
}

static od_status string_call(od_nvml *n, nv_ret (*fn)(nv_dev, char *, unsigned), nv_dev h,
                             char *buf, size_t size, const char *what, od_error *err)
{
    if (size == 0)
        return od_fail(err, OD_ERR_INTERNAL, "empty buffer for %s", what);
    buf[0] = 0;
    if (!fn)
        return OD_OK;
    nv_ret r = fn(h, buf, size > 0xffffffffu ? 0xffffffffu : (unsigned)size);
    buf[size - 1] = 0; /* never trust the library to terminate */
    if (r != NV_SUCCESS) {
        buf[0] = 0;
        return nvfail(n, r, what, err);
    }
    return OD_OK;
}

od_status od_nvml_device_name(od_nvml *n, od_nvml_device dev, char *buf, size_t size,
                              od_error *err)
{
    return string_call(n, n->name, dev.handle, buf, size, "device name", err);
}

od_status od_nvml_device_uuid(od_nvml *n, od_nvml_device dev, char *buf, size_t size,
                              od_error *err)
{
    return string_call(n, n->uuid, dev.handle, buf, size, "device UUID", err);
}

od_status od_nvml_memory_info(od_nvml *n, od_nvml_device dev, od_nvml_memory *mem,
                              od_error *err)
{
    memset(mem, 0, sizeof *mem);
    if (n->mem_v2 && !n->no_mem_v2) {
        nv_memory_v2 m;
        memset(&m, 0, sizeof m);
        m.version = NV_MEMORY_V2_VERSION;
        nv_ret r = n->mem_v2(dev.handle, &m);
        if (r == NV_SUCCESS) {
            mem->total_bytes = m.total;
            mem->used_bytes = m.used;
            mem->free_bytes = m.free;
            mem->reserved_bytes = m.reserved;
            mem->version = 2;
            return OD_OK;
        }
        if (!unsupported(r))
            return nvfail(n, r, "memory info", err);
        n->no_mem_v2 = 1; /* remember: do not ask again every sample */
    }
    nv_memory_v1 m;
    memset(&m, 0, sizeof m);
    nv_ret r = n->mem_v1(dev.handle, &m);
    if (r != NV_SUCCESS)
        return nvfail(n, r, "memory info", err);
    mem->total_bytes = m.total;
    mem->used_bytes = m.used;
    mem->free_bytes = m.free;
    mem->version = 1;
    return OD_OK;
}

/* One attempt with the v2/v3 struct; grows the reusable buffer on INSUFFICIENT_SIZE. */
static nv_ret procs_call(od_nvml *n, nv_ret (*fn)(nv_dev, unsigned *, nv_process_v2 *),
                         nv_dev h, unsigned *got)
{
    /* Processes start between the two calls: retry a few times, each with the size NVML
     * asked for plus some slack; a device never runs more than a few thousand. */
    for (int attempt = 0; attempt < 4; attempt++) {
        unsigned cnt = (unsigned)n->pbuf_cap;
        nv_ret r = fn(h, &cnt, n->pbuf);
        if (r != NV_ERROR_INSUFFICIENT_SIZE) {
            *got = r == NV_SUCCESS ? (cnt < n->pbuf_cap ? cnt : (unsigned)n->pbuf_cap) : 0;
            return r;
        }
        size_t want = (size_t)cnt + 16;
        if (want > 65536 || want <= n->pbuf_cap)
            want = n->pbuf_cap * 2 + 16;
        if (want > 65536)
            return r;
        nv_process_v2 *nb = realloc(n->pbuf, want * sizeof *nb);
        if (!nb)
            return r;
        n->pbuf = nb;
        n->pbuf_cap = want;
    }
    return NV_ERROR_INSUFFICIENT_SIZE;
}

static void store(od_nvml_process *out, unsigned pid, unsigned long long used,
                  unsigned gi, unsigned ci)
{
    out->pid = pid;
    out->used_bytes = used == NV_VALUE_NOT_AVAILABLE ? OD_NVML_BYTES_UNKNOWN : used;
    out->gpu_instance_id = gi;
    out->compute_instance_id = ci;
}

od_status od_nvml_processes(od_nvml *n, od_nvml_device dev, od_nvml_process *out,
                            size_t cap, size_t *count, int *more, od_error *err)
{
    *count = 0;
    if (more)
        *more = 0;
    if (!n->pbuf) {
        n->pbuf_cap = 8; /* grows on demand; small so that growth is exercised */
        n->pbuf = malloc(n->pbuf_cap * sizeof *n->pbuf);
        if (!n->pbuf) {
            n->pbuf_cap = 0;
            return od_fail(err, OD_ERR_NOMEM, "out of memory");
        }
    }
    unsigned got = 0;
    nv_ret r = NV_ERROR_FUNCTION_NOT_FOUND;
    int v1 = 0;
    if (n->procs_v3 && !n->no_procs_v3) {
        r = procs_call(n, n->procs_v3, dev.handle, &got);
        if (unsupported(r))
            n->no_procs_v3 = 1;
    }
    if (unsupported(r) && n->procs_v2 && !n->no_procs_v2) {
        r = procs_call(n, n->procs_v2, dev.handle, &got);
        if (unsupported(r))
            n->no_procs_v2 = 1;
    }
    if (unsupported(r) && n->procs_v1) {
        /* The v1 struct is smaller; reuse the same buffer, viewed as v1 entries. */
        nv_process_v1 *p1 = (nv_process_v1 *)n->pbuf;
        for (int attempt = 0; attempt < 4; attempt++) {
            unsigned cnt = (unsigned)n->pbuf_cap;
            r = n->procs_v1(dev.handle, &cnt, p1);
            if (r != NV_ERROR_INSUFFICIENT_SIZE) {
                got = r == NV_SUCCESS ? (cnt < n->pbuf_cap ? cnt : (unsigned)n->pbuf_cap) : 0;
                break;
            }
            size_t want = (size_t)cnt + 16;
            if (want > 65536 || want <= n->pbuf_cap)
                break;
            nv_process_v2 *nb = realloc(n->pbuf, want * sizeof *nb);
            if (!nb)
                break;
            n->pbuf = nb;
            n->pbuf_cap = want;
            p1 = (nv_process_v1 *)n->pbuf;
        }
        v1 = 1;
    }
    if (r != NV_SUCCESS)
        return nvfail(n, r, "running processes", err);
    size_t k = got < cap ? got : cap;
    for (size_t i = 0; i < k; i++) {
        if (v1) {
            const nv_process_v1 *p = (const nv_process_v1 *)n->pbuf + i;
            store(&out[i], p->pid, p->usedGpuMemory, UINT32_MAX, UINT32_MAX);
        } else {
            const nv_process_v2 *p = n->pbuf + i;
            store(&out[i], p->pid, p->usedGpuMemory, p->gpuInstanceId, p->computeInstanceId);
        }
    }
    *count = k;
    if (more && got > cap)
        *more = 1;
    return OD_OK;
}

od_status od_nvml_mig_mode(od_nvml *n, od_nvml_device dev, int *enabled, od_error *err)
{
    *enabled = 0;
    if (!n->mig_mode)
        return OD_OK;
    unsigned cur = 0, pending = 0;
    nv_ret r = n->mig_mode(dev.handle, &cur, &pending);
    if (r == NV_ERROR_NOT_SUPPORTED || r == NV_ERROR_FUNCTION_NOT_FOUND)
        return OD_OK; /* a GPU without MIG (anything before A100) */
    if (r != NV_SUCCESS)
        return nvfail(n, r, "MIG mode", err);
    *enabled = cur == 1;
    return OD_OK;
}

od_status od_nvml_mig_devices(od_nvml *n, od_nvml_device dev, od_nvml_device *out,
                              size_t cap, size_t *count, od_error *err)
{
    *count = 0;
    if (!n->mig_max || !n->mig_by_index)
        return OD_OK;
    unsigned max = 0;
    nv_ret r = n->mig_max(dev.handle, &max);
    if (r != NV_SUCCESS)
        return nvfail(n, r, "MIG device count", err);
    /* Slots are sparse: an index without an instance answers NOT_FOUND. */
    for (unsigned i = 0; i < max && *count < cap; i++) {
        nv_dev h = NULL;
        r = n->mig_by_index(dev.handle, i, &h);
        if (r == NV_ERROR_NOT_FOUND || r == NV_ERROR_INVALID_ARGUMENT)
            continue;
        if (r != NV_SUCCESS)
            return nvfail(n, r, "MIG device handle", err);
        out[(*count)++].handle = h;
    }
    return OD_OK;
}

int od_nvml_device_lost(const od_nvml *n)
{
    return n->last == NV_ERROR_GPU_IS_LOST || n->last == NV_ERROR_RESET_REQUIRED ||
           n->last == NV_ERROR_UNINITIALIZED || n->last == NV_ERROR_DRIVER_NOT_LOADED ||
           n->last == NV_ERROR_LIBRARY_NOT_FOUND;
}
