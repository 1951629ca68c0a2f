/* script.h - the playback script of the fake libnvidia-ml.so.1 used by the tests.
 *
 * One directive per line; '#' starts a comment; fields are separated by blanks.
 *   driver VERSION               what nvmlSystemGetDriverVersion answers
 *   speed FACTOR                 playback runs FACTOR times faster than the timestamps
 *   after_end hold|lost          after a device's last sample: keep it, or report the GPU lost
 *   api MEM PROCS                MEM: v2|v1, PROCS: v3|v2|v1|none - newer calls answer
 *                                NOT_SUPPORTED, as an older driver's would
 *   device TOTAL RESERVE UUID NAME...   one physical GPU (index = order of appearance)
 *   mig DEVICE TOTAL USED UUID NAME...  a MIG instance of DEVICE (makes MIG mode on)
 *   sample DEVICE T USED [PID=BYTES|PID=?]...   at T seconds (from nvmlInit) the device's
 *                                memory in use as NVML v1 reports it (driver reserve
 *                                included) and its compute processes
 * Samples of a device must come in time order. Test-only code: it may print. */
#ifndef FAKENVML_SCRIPT_H
#define FAKENVML_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#define FAKE_MAX_DEVICES 16
#define FAKE_MAX_MIG 8
#define FAKE_MAX_PROCS 64
#define FAKE_MAX_SAMPLES 1000000

typedef struct {
    uint32_t pid;
    uint64_t used; /* UINT64_MAX: "not available" */
} fake_proc;

typedef struct {
    double t;
    uint64_t used;
    size_t proc_first, proc_count; /* into fake_script.procs */
} fake_sample;

typedef struct fake_device {
    char name[96], uuid[96];
    uint64_t total, reserve, mig_used;
    int is_mig, parent;
    struct fake_device *migs[FAKE_MAX_MIG];
    int n_mig;
    fake_sample *samples;
    size_t n_samples, cap_samples;
} fake_device;

typedef struct {
    char driver[80];
    double speed;
    int lost_after_end;
    int mem_api, procs_api; /* 2|1; 3|2|1|0 */
    fake_device devices[FAKE_MAX_DEVICES];
    int n_devices;
    fake_device migs[FAKE_MAX_DEVICES * FAKE_MAX_MIG];
    int n_migs;
    fake_proc *procs;
    size_t n_procs, cap_procs;
} fake_script;

/* Parse text[0..len) into *s (zeroed by the call). Returns 0, or -1 with
 * "byte N: what was expected" in errbuf. Free with fake_script_free either way. */
int fake_script_parse(const char *text, size_t len, fake_script *s, char *errbuf, size_t errsize);
void fake_script_free(fake_script *s);

#endif
