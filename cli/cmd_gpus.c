/* cmd_gpus.c - `oomdoc gpus`: every GPU NVML sees, its memory, and who uses it. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "commands.h"
#include "nvmlcli.h"
#include "output.h"
#include "read/nvml.h"

#define MAX_PROCS 1024
#define MAX_MIG 16

static void usage(void)
{
    printf("Usage: oomdoc gpus [--json] [--nvml-lib PATH]\n"
           "\n"
           "List the GPUs NVML sees: name, UUID, total/used/free memory (as nvidia-smi\n"
           "--query-gpu=name,memory.total,memory.used,memory.free), the driver's reserve, MIG\n"
           "instances, and the memory each compute process holds.\n"
           "\n"
           "Options:\n"
           "  --json            JSON output (schema_version 1, sizes in bytes)\n"
           "  --nvml-lib PATH   NVML library to load (default: $OOMDOC_NVML_LIB, else\n"
           "                    libnvidia-ml.so.1 from the driver)\n"
           "  -h, --help        this help\n"
           "\n"
           "Things users trip on, shown in the output:\n"
           "  - NVML numbers GPUs by PCI bus; CUDA numbers them fastest first unless\n"
           "    CUDA_DEVICE_ORDER=PCI_BUS_ID, and CUDA_VISIBLE_DEVICES renumbers them: compare\n"
           "    UUIDs. With CUDA_VISIBLE_DEVICES set, the cuda:N -> GPU mapping is printed.\n"
           "  - NVML reports host PIDs: inside a container, processes of other containers\n"
           "    (often your own too) are shown as not visible in this PID namespace.\n"
           "  - With MIG on, each instance has its own memory; the GPU's figures cover all.\n"
           "\n"
           "Example (with the test suite's fake NVML playing back a real H200 run):\n"
           "  OOMDOC_FAKENVML_SCRIPT=tests/data/nvml/gpus_h200.script \\\n"
           "    oomdoc gpus --nvml-lib build/rel/tests/fakenvml/libnvidia-ml.so.1\n"
           "\n" OD_EXIT_CODES_HELP);
}

typedef struct {
    char name[96], uuid[96];
    od_nvml_memory mem;
} miginfo;

/* One GPU as NVML answers for it: its memory, its processes (largest first), its MIG
 * instances. */
typedef struct {
    char name[96], uuid[96];
    od_nvml_memory mem;
    od_nvml_process *procs;
    size_t np;
    int more, procs_ok;
    char procs_why[240];  /* why the processes are unknown (!procs_ok) */
    int mig;
    miginfo migs[MAX_MIG];
    size_t nmig;
} devinfo;

static int proc_cmp(const void *a, const void *b)
{
    const od_nvml_process *x = a, *y = b;
    uint64_t ux = x->used_bytes == OD_NVML_BYTES_UNKNOWN ? 0 : x->used_bytes;
    uint64_t uy = y->used_bytes == OD_NVML_BYTES_UNKNOWN ? 0 : y->used_bytes;
    if (ux != uy)
        return ux > uy ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static const char *iec(uint64_t v, char *buf)
{
    return od_format_iec(v, buf, 32);
}

/* CUDA_VISIBLE_DEVICES entries are indices or UUID prefixes ("GPU-8a1f", "MIG-…"). */
static int visible_to_nvml(const char *entry, const devinfo *devs, unsigned n)
{
    char *end;
    long v = strtol(entry, &end, 10);
    if (end != entry && *end == 0)
        return v >= 0 && (unsigned long)v < n ? (int)v : -1;
    size_t l = strlen(entry);
    if (l == 0)
        return -1;
    int found = -1;
    for (unsigned i = 0; i < n; i++)
        if (strncmp(devs[i].uuid, entry, l) == 0) {
            if (found >= 0)
                return -1; /* ambiguous prefix */
            found = (int)i;
        }
    return found;
}

/* Ask NVML everything about GPU i. 0, or the exit code after the error line. */
static int read_gpu(od_nvml *nv, unsigned i, devinfo *di)
{
    od_nvml_device d;
    od_error err;
    od_error_clear(&err);
    if (od_nvml_device_get(nv, i, &d, &err) != OD_OK ||
        od_nvml_device_name(nv, d, di->name, sizeof di->name, &err) != OD_OK ||
        od_nvml_device_uuid(nv, d, di->uuid, sizeof di->uuid, &err) != OD_OK ||
        od_nvml_memory_info(nv, d, &di->mem, &err) != OD_OK) {
        fprintf(stderr, "oomdoc: gpus: GPU %u: %s\n", i, od_cli_name(err.msg));
        return OD_EXIT_NODEV;
    }
    if (!(di->procs = malloc(MAX_PROCS * sizeof *di->procs))) {
        fprintf(stderr, "oomdoc: gpus: out of memory\n");
        return OD_EXIT_INTERNAL;
    }
    di->procs_ok = 1;
    if (od_nvml_processes(nv, d, di->procs, MAX_PROCS, &di->np, &di->more, &err) != OD_OK) {
        di->procs_ok = 0;
        di->np = 0;
        snprintf(di->procs_why, sizeof di->procs_why, "%s", err.msg);
    }
    qsort(di->procs, di->np, sizeof *di->procs, proc_cmp);
    od_nvml_device migs[MAX_MIG];
    size_t nmig = 0;
    if (od_nvml_mig_mode(nv, d, &di->mig, &err) == OD_OK && di->mig)
        od_nvml_mig_devices(nv, d, migs, MAX_MIG, &nmig, &err);
    for (size_t m = 0; m < nmig; m++) {
        miginfo *mi = &di->migs[di->nmig];
        if (od_nvml_device_name(nv, migs[m], mi->name, sizeof mi->name, &err) == OD_OK &&
            od_nvml_device_uuid(nv, migs[m], mi->uuid, sizeof mi->uuid, &err) == OD_OK &&
            od_nvml_memory_info(nv, migs[m], &mi->mem, &err) == OD_OK)
            di->nmig++;
    }
    return 0;
}

/* The text of one GPU; names from NVML and from /proc are shown escaped. *any_hidden:
 * a process of another PID namespace was listed. */
static void print_gpu(unsigned i, const devinfo *di, int *any_hidden)
{
    char b1[32], b2[32], b3[32], b4[32];
    printf("\n%sGPU %u%s  %s  %s\n", od_c_bold, i, od_c_reset, od_cli_esc(di->name), od_cli_esc(di->uuid));
    printf("  total %s, used %s, free %s", iec(di->mem.total_bytes, b1), iec(di->mem.used_bytes, b2),
           iec(di->mem.free_bytes, b3));
    if (di->mem.version == 2)
        printf(", driver reserve %s (not in used)\n", iec(di->mem.reserved_bytes, b4));
    else
        printf(" (NVML v1: used includes the driver reserve)\n");
    for (size_t m = 0; m < di->nmig; m++) {
        const miginfo *mi = &di->migs[m];
        printf("  MIG %s  %s: total %s, used %s, free %s\n", od_cli_esc(mi->name), od_cli_esc(mi->uuid),
               iec(mi->mem.total_bytes, b1), iec(mi->mem.used_bytes, b2), iec(mi->mem.free_bytes, b3));
    }
    if (!di->procs_ok)
        printf("  processes: unknown (%s)\n", od_cli_esc(di->procs_why));
    else if (di->np == 0)
        printf("  no compute processes\n");
    else
        printf("  %-10s %12s  %s\n", "PID", "USED", "PROCESS");
    for (size_t k = 0; k < di->np; k++) {
        const od_nvml_process *p = &di->procs[k];
        char pname[64];
        int visible = od_cli_pid_name(p->pid, pname, sizeof pname);
        *any_hidden |= !visible;
        printf("  %-10u %12s  %s\n", (unsigned)p->pid,
               p->used_bytes != OD_NVML_BYTES_UNKNOWN ? iec(p->used_bytes, b1) : "n/a",
               visible ? od_cli_esc(pname) : "(not in this PID namespace: another container?)");
    }
    if (di->more)
        printf("  ... more than %d processes, list truncated\n", MAX_PROCS);
}

static json_t *gpu_json(unsigned i, const devinfo *di)
{
    json_t *jg = json_object(), *jm = json_array();
    json_object_set_new(jg, "index", json_integer(i));
    json_object_set_new(jg, "name", od_cli_json_str(di->name));
    json_object_set_new(jg, "uuid", od_cli_json_str(di->uuid));
    json_object_set_new(jg, "total_bytes", json_integer((json_int_t)di->mem.total_bytes));
    json_object_set_new(jg, "used_bytes", json_integer((json_int_t)di->mem.used_bytes));
    json_object_set_new(jg, "free_bytes", json_integer((json_int_t)di->mem.free_bytes));
    json_object_set_new(jg, "reserved_bytes",
                        di->mem.version == 2 ? json_integer((json_int_t)di->mem.reserved_bytes) : json_null());
    json_object_set_new(jg, "memory_info_version", json_integer(di->mem.version));
    json_object_set_new(jg, "mig_enabled", json_boolean(di->mig));
    for (size_t m = 0; m < di->nmig; m++) {
        const miginfo *mi = &di->migs[m];
        json_t *o = json_object();
        json_object_set_new(o, "name", od_cli_json_str(mi->name));
        json_object_set_new(o, "uuid", od_cli_json_str(mi->uuid));
        json_object_set_new(o, "total_bytes", json_integer((json_int_t)mi->mem.total_bytes));
        json_object_set_new(o, "used_bytes", json_integer((json_int_t)mi->mem.used_bytes));
        json_object_set_new(o, "free_bytes", json_integer((json_int_t)mi->mem.free_bytes));
        json_array_append_new(jm, o);
    }
    json_object_set_new(jg, "mig_devices", jm);
    json_t *jp = di->procs_ok ? json_array() : json_null();
    for (size_t k = 0; k < di->np; k++) {
        const od_nvml_process *p = &di->procs[k];
        char pname[64];
        int visible = od_cli_pid_name(p->pid, pname, sizeof pname);
        json_t *o = json_object();
        json_object_set_new(o, "pid", json_integer(p->pid));
        json_object_set_new(o, "used_bytes", p->used_bytes != OD_NVML_BYTES_UNKNOWN
                                                 ? json_integer((json_int_t)p->used_bytes) : json_null());
        json_object_set_new(o, "visible", json_boolean(visible));
        json_object_set_new(o, "process_name", visible ? od_cli_json_str(pname) : json_null());
        json_array_append_new(jp, o);
    }
    json_object_set_new(jg, "processes", jp);
    json_object_set_new(jg, "processes_truncated", json_boolean(di->more));
    return jg;
}

/* CUDA's view of the same GPUs (CUDA_VISIBLE_DEVICES): printed, or as JSON when jmap. */
static void cuda_mapping(const char *cvd, const devinfo *devs, unsigned n, json_t *jmap)
{
    char *copy = strdup(cvd);
    char *save = NULL, *tok = copy ? strtok_r(copy, ",", &save) : NULL;
    if (!jmap)
        printf("\nCUDA_VISIBLE_DEVICES=%s:\n", od_cli_esc(cvd));
    for (int k = 0; tok; k++, tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        int idx = visible_to_nvml(tok, devs, n);
        if (jmap) {
            json_t *o = json_object();
            json_object_set_new(o, "cuda_index", json_integer(k));
            json_object_set_new(o, "entry", od_cli_json_str(tok));
            json_object_set_new(o, "nvml_index", idx >= 0 ? json_integer(idx) : json_null());
            json_object_set_new(o, "uuid", idx >= 0 ? od_cli_json_str(devs[idx].uuid) : json_null());
            json_array_append_new(jmap, o);
        } else if (idx >= 0) {
            printf("  cuda:%d = NVML GPU %d (%s)\n", k, idx, od_cli_esc(devs[idx].uuid));
        } else {
            /* CUDA stops enumerating at the first entry it cannot match. */
            printf("  cuda:%d = '%s' matches no GPU: CUDA ignores it and every entry after it\n", k,
                   od_cli_esc(tok));
            break;
        }
    }
    free(copy);
}

static void print_notes(unsigned n, int pci_order, int any_hidden, int any_v1)
{
    if (n > 1 && !pci_order)
        printf("\nnote: NVML numbers GPUs by PCI bus, CUDA fastest first (CUDA_DEVICE_ORDER is not\n"
               "PCI_BUS_ID): cuda:N may not be GPU N. Match them by UUID.\n");
    if (any_hidden)
        printf("\nnote: NVML reports host PIDs; a PID not in this PID namespace belongs to another\n"
               "container (or to this one, seen from the host).\n");
    if (any_v1)
        printf("\nnote: this driver has only NVML's v1 memory call: used includes the driver's\n"
               "reserve (about 600 MiB on recent GPUs), which no process can allocate.\n");
}

int od_cmd_gpus(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"nvml-lib", required_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c;
    const char *lib = NULL;
    optind = 1;
    opterr = 0; /* the refusal is ours, in one line */
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'L': lib = optarg; break;
        case 'h': usage(); return OD_EXIT_OK;
        default: return od_cli_unknown_option("gpus", "h", opts, argv);
        }
    }
    if (optind < argc)
        return od_cli_usage_error("gpus", "unexpected argument '%s'", od_cli_name(argv[optind]));
    od_cli_color_init();

    int rc = OD_EXIT_OK;
    od_nvml *nv = od_cli_nvml_open("gpus", lib, &rc);
    if (!nv)
        return rc;
    od_error err;
    od_error_clear(&err);
    unsigned n = 0;
    devinfo *devs = NULL;
    if (od_nvml_device_count(nv, &n, &err) != OD_OK) {
        rc = od_cli_report_error("gpus", &err);
        goto done;
    }
    if (n == 0) {
        fprintf(stderr, "oomdoc: gpus: NVML is loaded but sees no GPU\n");
        rc = OD_EXIT_NODEV;
        goto done;
    }
    if (!(devs = calloc(n, sizeof *devs))) {
        rc = OD_EXIT_INTERNAL;
        goto done;
    }
    for (unsigned i = 0; i < n && !rc; i++)
        rc = read_gpu(nv, i, &devs[i]);
    if (rc)
        goto done;
    char drv[80];
    od_nvml_driver_version(nv, drv, sizeof drv);
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    const char *order = getenv("CUDA_DEVICE_ORDER");
    int pci_order = order && strcmp(order, "PCI_BUS_ID") == 0;
    int any_hidden = 0, any_v1 = 0;
    for (unsigned i = 0; i < n; i++)
        any_v1 |= devs[i].mem.version == 1;
    if (json) {
        json_t *doc = json_object(), *jgpus = json_array(), *jmap = json_array();
        json_object_set_new(doc, "schema_version", json_integer(1));
        json_object_set_new(doc, "driver_version", od_cli_json_str(drv));
        for (unsigned i = 0; i < n; i++)
            json_array_append_new(jgpus, gpu_json(i, &devs[i]));
        json_object_set_new(doc, "gpus", jgpus);
        if (cvd)
            cuda_mapping(cvd, devs, n, jmap);
        json_object_set_new(doc, "cuda_visible_devices", cvd ? od_cli_json_str(cvd) : json_null());
        json_object_set_new(doc, "cuda_device_order", json_string(pci_order ? "PCI_BUS_ID" : "FASTEST_FIRST"));
        json_object_set_new(doc, "cuda_mapping", jmap);
        rc = od_cli_print_json(doc);
    } else {
        printf("%sNVML%s driver %s, %u GPU%s\n", od_c_bold, od_c_reset, drv[0] ? od_cli_esc(drv) : "?", n,
               n == 1 ? "" : "s");
        for (unsigned i = 0; i < n; i++)
            print_gpu(i, &devs[i], &any_hidden);
        if (cvd)
            cuda_mapping(cvd, devs, n, NULL);
        print_notes(n, pci_order, any_hidden, any_v1);
    }
done:
    for (unsigned i = 0; devs && i < n; i++)
        free(devs[i].procs);
    free(devs);
    od_nvml_close(nv);
    return rc;
}
