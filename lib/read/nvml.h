/* nvml.h - NVIDIA's management library (NVML), loaded at run time with dlopen.
 *
 * oomdoc has no build-time dependency on the NVIDIA driver: the few NVML functions and
 * structs it needs are declared in nvml.c from NVML's public ABI, and the library is
 * opened by path (normally "libnvidia-ml.so.1", which the driver installs). Where NVML
 * offers a newer call it is preferred and the older one is the fallback:
 *   memory:    nvmlDeviceGetMemoryInfo_v2 (its `used` excludes the driver's reserve)
 *              -> nvmlDeviceGetMemoryInfo (v1: `used` includes that reserve);
 *   processes: nvmlDeviceGetComputeRunningProcesses_v3 -> _v2 -> v1.
 *
 * Ownership: od_nvml_open returns a handle the caller closes with od_nvml_close (NULL is
 * fine); every other buffer is the caller's. Not thread-safe: one handle, one thread.
 * Failures of NVML itself (no library, no driver, GPU lost) are OD_ERR_NODEV. */
#ifndef OD_NVML_H
#define OD_NVML_H

#include "oomdoc/od.h"

typedef struct od_nvml od_nvml;

/* A device as NVML names it (a physical GPU or a MIG instance). Opaque. */
typedef struct {
    void *handle;
} od_nvml_device;

typedef struct {
    uint64_t total_bytes;
    uint64_t used_bytes;     /* v2: excludes reserved_bytes; v1: includes it */
    uint64_t free_bytes;
    uint64_t reserved_bytes; /* driver/firmware reserve (v2 only; 0 with v1) */
    int version;             /* 2 or 1: which call answered */
} od_nvml_memory;

/* NVML reports "not available" (no permission, WDDM) for a process's memory as this. */
#define OD_NVML_BYTES_UNKNOWN UINT64_MAX

typedef struct {
    uint32_t pid;        /* as the driver sees it: possibly another PID namespace's */
    uint64_t used_bytes; /* OD_NVML_BYTES_UNKNOWN when NVML does not say */
    uint32_t gpu_instance_id, compute_instance_id; /* MIG; UINT32_MAX when not given */
} od_nvml_process;

/* dlopen lib_path (NULL: "libnvidia-ml.so.1") and nvmlInit. Fails with OD_ERR_NODEV and a
 * sentence naming the cause (library missing, driver not loaded, ...). */
od_status od_nvml_open(const char *lib_path, od_nvml **out, od_error *err);

/* nvmlShutdown and dlclose. */
void od_nvml_close(od_nvml *nvml);

/* Driver version string into buf ("" when NVML does not say). */
void od_nvml_driver_version(od_nvml *nvml, char *buf, size_t size);

od_status od_nvml_device_count(od_nvml *nvml, unsigned *count, od_error *err);
od_status od_nvml_device_get(od_nvml *nvml, unsigned index, od_nvml_device *dev, od_error *err);

/* Name and UUID ("GPU-…", "MIG-…") into buf, NUL-terminated. */
od_status od_nvml_device_name(od_nvml *nvml, od_nvml_device dev, char *buf, size_t size,
                              od_error *err);
od_status od_nvml_device_uuid(od_nvml *nvml, od_nvml_device dev, char *buf, size_t size,
                              od_error *err);

/* Memory figures: v2 where the driver has it, else v1 (mem->version says which). */
od_status od_nvml_memory_info(od_nvml *nvml, od_nvml_device dev, od_nvml_memory *mem,
                              od_error *err);

/* Compute processes on the device into out[0..cap). *count receives how many were
 * stored; *more (may be NULL) is set when the device had more than cap. */
od_status od_nvml_processes(od_nvml *nvml, od_nvml_device dev, od_nvml_process *out,
                            size_t cap, size_t *count, int *more, od_error *err);

/* MIG: *enabled is 1 when the GPU is partitioned (0 when NVML has no MIG support), and
 * od_nvml_mig_devices lists its instances (up to cap). */
od_status od_nvml_mig_mode(od_nvml *nvml, od_nvml_device dev, int *enabled, od_error *err);
od_status od_nvml_mig_devices(od_nvml *nvml, od_nvml_device dev, od_nvml_device *out,
                              size_t cap, size_t *count, od_error *err);

/* True when the last failure of this handle means the device is gone (GPU lost, reset
 * required, unplugged) rather than a transient or unsupported query. */
int od_nvml_device_lost(const od_nvml *nvml);

#endif
