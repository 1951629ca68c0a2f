/* cmd_watch.c - `oomdoc watch`: sample one GPU's memory (and its processes') through NVML,
 * write the series `trend` reads, optionally around a command, optionally served to
 * Prometheus; at the end the trend verdict, the peak and the projected time to OOM.
 *
 * What is kept of the samples (trends, processes, projection, alarm) is lib/watchtrend's
 * od_watch; this file polls, serves, forwards signals and prints. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analyze/watchtrend.h"
#include "base/textsafe.h"
#include "base/units.h"
#include "commands.h"
#include "nvmlcli.h"
#include "output.h"
#include "read/nvml.h"
#include "render/prom.h"

#define NVML_PROCS 1024
#define IO_TIMEOUT_MS 1000

static void usage(void)
{
    printf("Usage: oomdoc watch [OPTIONS] [-- COMMAND [ARGS...]]\n"
           "\n"
           "Sample a GPU's memory in use (and that of its processes) through NVML. On a terminal\n"
           "without --out: a live table per GPU, redrawn in place - used of capacity, a bar, the\n"
           "trend, the time to OOM, the processes. Otherwise the series `oomdoc trend` reads:\n"
           "CSV time_s,used_bytes[,process_used_bytes] (JSON Lines when --out ends in .jsonl)\n"
           "to --out FILE, or to stdout when it is a pipe or a file (--out - forces it); several\n"
           "GPUs in one target get a gpu column. time_s counts from the start on a monotonic\n"
           "clock. The verdict (leak, stable, spike) has hysteresis: it leaves a verdict only\n"
           "after 3 classifications in a row say another (a leak shows at once). At the end, on\n"
           "stderr: the verdict, the growth per second, the projected time to OOM, the peak.\n"
           "With -- COMMAND: runs it, forwards signals to it, stops when it ends and exits with\n"
           "its exit status; the terminal is the command's, so the live view is one status line\n"
           "on stderr.\n"
           "\n"
           "Options:\n"
           "  --interval DURATION   time between samples: 100ms (default), 0.5s, 2s, 1m\n"
           "  --device N|all        NVML index of the GPU to watch (default 0; see oomdoc gpus);\n"
           "                        all: every GPU (one file each with {gpu} in --out, else a\n"
           "                        gpu column)\n"
           "  --pid PID             add process_used_bytes: the memory NVML attributes to PID\n"
           "  --out FILE            write the series to FILE (-: stdout); *.jsonl: JSON Lines;\n"
           "                        {gpu} in FILE is replaced by the GPU's index\n"
           "  --capacity SIZE       memory to project OOM against (default: the GPU's total\n"
           "                        less the driver reserve); e.g. 80GiB\n"
           "  --alarm MINUTES       warn on stderr as soon as the projected OOM is that close\n"
           "  --duration DURATION   stop after this long (default: until COMMAND ends, or\n"
           "                        SIGINT/SIGTERM)\n"
           "  --prometheus [HOST]:PORT  serve /metrics in Prometheus text format on its own\n"
           "                        thread; HOST defaults to 127.0.0.1 (0.0.0.0, [::] or\n"
           "                        [::ffff:0.0.0.0]: every interface, which watch points out);\n"
           "                        port 0: any free port; the address is printed on stderr.\n"
           "                        Alerting rules and a Grafana board: deploy/ (README: Fleet)\n"
           "  --json                the end summary as JSON on stdout instead of text on stderr\n"
           "  --nvml-lib PATH       NVML library to load (default: $OOMDOC_NVML_LIB, else\n"
           "                        libnvidia-ml.so.1 from the driver)\n"
           "  -h, --help            this help\n"
           "\n"
           "Examples:\n"
           "  oomdoc watch --out run.csv --alarm 10 -- python train.py\n"
           "  oomdoc watch --device all --prometheus :9401 --interval 1s\n"
           "  (with the test suite's fake NVML: OOMDOC_FAKENVML_SCRIPT=tests/data/nvml/gpus_h200.script\n"
           "   oomdoc watch --nvml-lib build/rel/tests/fakenvml/libnvidia-ml.so.1 --duration 1s)\n"
           "\n"
           "Exit status: COMMAND's when one is given (128+N if signal N ended it); otherwise\n"
           "0 when stopped by --duration or a signal.\n" OD_EXIT_CODES_HELP);
}

/* ---- signals ---------------------------------------------------------------------- */

static volatile sig_atomic_t stop_requested, child_done;
static volatile pid_t child_pid;

static void on_signal(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    pid_t c = child_pid;
    if (c > 0) {
        /* A terminal's Ctrl-C already reached the command (same process group, sent by
         * the kernel): forwarding it would deliver it twice. */
        if (!info || info->si_code != SI_KERNEL)
            kill(c, sig);
        return;
    }
    if (sig != SIGUSR1 && sig != SIGUSR2)
        stop_requested = 1;
}

static void on_sigchld(int sig)
{
    (void)sig;
    child_done = 1;
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: poll must wake up */
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        sigaction(forwarded[i], &sa, NULL);
    struct sigaction sc;
    memset(&sc, 0, sizeof sc);
    sc.sa_handler = on_sigchld;
    sc.sa_flags = SA_NOCLDSTOP;
    sigemptyset(&sc.sa_mask);
    sigaction(SIGCHLD, &sc, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- option values ---------------------------------------------------------------- */

/* "100ms", "0.5s", "2s", "1m", or a bare number of seconds. */
static int parse_duration(const char *opt, const char *text, double min_s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    double mult = 1;
    if (end == text || errno)
        goto bad;
    if (strcmp(end, "ms") == 0)
        mult = 1e-3;
    else if (strcmp(end, "s") == 0 || *end == 0)
        mult = 1;
    else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
        mult = 60;
    else if (strcmp(end, "h") == 0)
        mult = 3600;
    else
        goto bad;
    v *= mult;
    if (!isfinite(v) || v < min_s || v > 30 * 86400.0)
        goto bad;
    *out = v;
    return 0;
bad:
    return od_cli_usage_error("watch", "%s: '%s' is not a duration of at least %gms (e.g. 100ms, "
                              "0.5s, 2m)", opt, text, min_s * 1e3);
}

/* ---- the watched state ------------------------------------------------------------ */

/* Where series go: a file (published once its header is in), or stdout. Several GPUs
 * written to one target carry a gpu column; one file per GPU with {gpu} in the name. */
typedef struct {
    FILE *f;               /* NULL: not written */
    od_safe_file file;     /* until the series replaces the old file */
    char path[512];        /* as messages name it */
    int jsonl, gpu_column, pid_column;
    int failed;            /* a write failed: sampling goes on, the series stops */
} series_out;

/* One GPU: what NVML says of it, where its series goes, and what lib/watchtrend keeps of
 * its samples (trend, processes, projection, alarm). */
typedef struct {
    unsigned index;
    char name[96], uuid[96];
    od_nvml_device dev;
    uint64_t total_bytes;
    int mem_version;
    int up;
    od_watch wt;
    size_t listed;         /* processes NVML listed at the last sample */
    int lost;
    series_out *out;       /* NULL: no series for this GPU */
} watch_state;

/* ---- Prometheus -------------------------------------------------------------------- */

static double m_up(const watch_state *w) { return w->up; }
static double m_total(const watch_state *w) { return (double)w->total_bytes; }
static double m_capacity(const watch_state *w) { return (double)w->wt.cfg.capacity_bytes; }
static double m_used(const watch_state *w) { return (double)w->wt.s.last_bytes; }
static double m_peak(const watch_state *w) { return (double)w->wt.s.peak_bytes; }
static double m_growth(const watch_state *w) { return w->wt.tr.growth_bytes_per_second; }
static double m_oom(const watch_state *w) { return w->wt.tr.projected_oom_s >= 0 ? w->wt.tr.projected_oom_s : INFINITY; }
static double m_leak(const watch_state *w) { return w->wt.tr.verdict == OD_WTREND_LEAK; }
static double m_samples(const watch_state *w) { return (double)w->wt.s.samples; }
static double m_procs(const watch_state *w) { return (double)w->listed; }
static double m_info(const watch_state *w) { (void)w; return 1; }
static double p_used(const od_wproc *p) { return (double)p->s.last_bytes; }
static double p_peak(const od_wproc *p) { return (double)p->s.peak_bytes; }
static double p_growth(const od_wproc *p) { return p->tr.growth_bytes_per_second; }
static double p_oom(const od_wproc *p) { return p->tr.projected_oom_s >= 0 ? p->tr.projected_oom_s : INFINITY; }

static const struct {
    const char *name, *help, *type;
    double (*value)(const watch_state *);
} dev_metrics[] = {
    {"oomdoc_gpu_up", "1 while NVML answers for this GPU, 0 once it is lost.", "gauge", m_up},
    {"oomdoc_gpu_memory_total_bytes", "Total memory of the GPU (NVML).", "gauge", m_total},
    {"oomdoc_gpu_memory_capacity_bytes", "Memory the OOM projection counts against.", "gauge", m_capacity},
    {"oomdoc_gpu_memory_used_bytes", "Memory in use at the last sample (NVML).", "gauge", m_used},
    {"oomdoc_gpu_memory_peak_bytes", "Highest memory in use since the watch started.", "gauge", m_peak},
    {"oomdoc_gpu_memory_growth_bytes_per_second",
     "Growth of memory in use in the current regime (robust slope).", "gauge", m_growth},
    {"oomdoc_gpu_memory_projected_oom_seconds",
     "Seconds until memory in use reaches capacity at the current growth; +Inf when not leaking.", "gauge", m_oom},
    {"oomdoc_gpu_memory_leak", "1 when the trend of memory in use is a leak.", "gauge", m_leak},
    {"oomdoc_gpu_processes", "Compute processes NVML lists on the GPU at the last sample.", "gauge", m_procs},
    {"oomdoc_watch_samples_total", "Samples taken of this GPU.", "counter", m_samples},
};

static const struct {
    const char *name, *help;
    double (*value)(const od_wproc *);
} proc_metrics[] = {
    {"oomdoc_process_memory_used_bytes", "Memory NVML attributes to the process.", p_used},
    {"oomdoc_process_memory_peak_bytes", "Highest memory of the process since it was first seen.", p_peak},
    {"oomdoc_process_memory_growth_bytes_per_second", "Growth of the process's memory (robust slope).", p_growth},
    {"oomdoc_process_memory_projected_oom_seconds",
     "Seconds until the GPU is full at this process's growth; +Inf when not leaking.", p_oom},
};

/* The exposition format wants each family's samples together: family by family, then
 * GPU by GPU (and process by process). */
static void render_metrics(watch_state *const *ws, size_t n, od_promtext *p)
{
    size_t procs = 0;
    for (size_t d = 0; d < n; d++)
        procs += ws[d]->wt.n_procs;
    /* The GPU's name, as an info metric (the other families carry gpu and uuid only). */
    od_prom_family(p, "oomdoc_gpu_info", "The GPU's name; always 1.", "gauge");
    for (size_t d = 0; d < n; d++) {
        char gpu[16];
        snprintf(gpu, sizeof gpu, "%u", ws[d]->index);
        const char *il[] = {"gpu", gpu, "uuid", ws[d]->uuid, "name", ws[d]->name};
        od_prom_sample(p, "oomdoc_gpu_info", il, 3, m_info(ws[d]));
    }
    for (size_t m = 0; m < sizeof dev_metrics / sizeof *dev_metrics; m++) {
        od_prom_family(p, dev_metrics[m].name, dev_metrics[m].help, dev_metrics[m].type);
        for (size_t d = 0; d < n; d++) {
            char gpu[16];
            snprintf(gpu, sizeof gpu, "%u", ws[d]->index);
            const char *dl[] = {"gpu", gpu, "uuid", ws[d]->uuid};
            od_prom_sample(p, dev_metrics[m].name, dl, 2, dev_metrics[m].value(ws[d]));
        }
    }
    for (size_t m = 0; procs && m < sizeof proc_metrics / sizeof *proc_metrics; m++) {
        od_prom_family(p, proc_metrics[m].name, proc_metrics[m].help, "gauge");
        for (size_t d = 0; d < n; d++) {
            char gpu[16];
            snprintf(gpu, sizeof gpu, "%u", ws[d]->index);
            for (size_t i = 0; i < ws[d]->wt.n_procs; i++) {
                char pid[16];
                snprintf(pid, sizeof pid, "%u", (unsigned)ws[d]->wt.procs[i].pid);
                const char *pl[] = {"gpu", gpu, "uuid", ws[d]->uuid, "pid", pid};
                od_prom_sample(p, proc_metrics[m].name, pl, 3, proc_metrics[m].value(&ws[d]->wt.procs[i]));
            }
        }
    }
}

/* 1 when the bound address is "every interface" in any of its spellings: 0.0.0.0, ::,
 * and ::ffff:0.0.0.0 (IPv4's any, mapped into IPv6). */
static int listens_everywhere(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
    if (ss->ss_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
        static const unsigned char mapped_any[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0};
        return IN6_IS_ADDR_UNSPECIFIED(a) || memcmp(a, mapped_any, 16) == 0;
    }
    return 0;
}

static int listen_on(const char *hostport, char *shown, size_t shown_size)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    if (!colon || colon == hostport + strlen(hostport) - 1 || (size_t)(colon - hostport) >= sizeof host)
        return od_cli_usage_error("watch", "--prometheus: expected HOST:PORT, got '%s'", od_cli_name(hostport)), -2;
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = 0;
    if (host[0] == '[' && host[strlen(host) - 1] == ']') { /* [::1]:9400 */
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = 0;
    }
    const char *port = colon + 1;
    char *end;
    long pv = strtol(port, &end, 10);
    if (*end || pv < 0 || pv > 65535)
        return od_cli_usage_error("watch", "--prometheus: bad port '%s'", od_cli_name(port)), -2;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    /* ":PORT" is this machine only; every interface must be asked for by address. */
    int gr = getaddrinfo(host[0] ? host : "127.0.0.1", port, &hints, &res);
    if (gr != 0) {
        fprintf(stderr, "oomdoc: watch: --prometheus %s: %s\n", od_cli_name(hostport), gai_strerror(gr));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 16) == 0) {
            struct sockaddr_storage ss;
            socklen_t sl = sizeof ss;
            char h[128] = "?", pt[16] = "?";
            if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
                getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, pt, sizeof pt, NI_NUMERICHOST | NI_NUMERICSERV);
            snprintf(shown, shown_size, strchr(h, ':') ? "http://[%s]:%s/metrics" : "http://%s:%s/metrics", h, pt);
            if (listens_everywhere(&ss))
                fprintf(stderr, "oomdoc: watch: --prometheus %s listens on every interface: whoever can reach "
                        "this machine can read the metrics (give 127.0.0.1:%s to keep them local)\n", od_cli_name(hostport), pt);
            break;
        }
        close(fd);
        fd = -1;
    }
    int saved = errno;
    freeaddrinfo(res);
    if (fd < 0)
        fprintf(stderr, "oomdoc: watch: --prometheus %s: cannot listen: %s\n", od_cli_name(hostport), strerror(saved));
    return fd;
}

/* ---- the endpoint's thread ------------------------------------------------------------
 * The endpoint runs on a thread of its own, over a non-blocking poll set: each connection
 * has a slot (MAX_CONNS) and a deadline (IO_TIMEOUT_MS to send its request, as long again
 * to take the answer), so a client that says nothing, or one byte a second, costs a slot
 * until its deadline and never a sample, an alarm, --duration or a forwarded signal. The
 * sampler and the endpoint share the watched state under state_lock, which the endpoint
 * holds only to render a page, never across I/O.
 *
 * Not libmicrohttpd: the endpoint serves one page to GET and HEAD, its request parser is
 * lib/prom's (fuzzed by fuzz_http_request); what the old code lacked was concurrency,
 * which this poll loop gives in a few hundred lines without a new run-time dependency on
 * every machine that runs `watch`. */

#define MAX_CONNS 64

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
    int fd;          /* -1: the slot is free */
    double deadline; /* monotonic seconds */
    char in[OD_HTTP_MAX_HEAD];
    size_t in_len;
    char *out;       /* the whole answer (NULL while the request is read) */
    size_t out_len, out_off;
} conn;

typedef struct {
    int lfd, wake[2]; /* wake: written once to stop the thread */
    int started;
    pthread_t thread;
    watch_state *const *ws;
    size_t n;
    conn conns[MAX_CONNS];
} server;

/* Give c its answer: status line, headers, body (not with HEAD); the connection then
 * waits to write. An allocation failure closes the connection. */
static void answer(conn *c, int code, const char *reason, const char *ctype, const char *body,
                   size_t body_len, int head_only)
{
    char hdr[256];
    int hn = snprintf(hdr, sizeof hdr,
                      "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n\r\n", code, reason, ctype, body_len);
    size_t blen = head_only ? 0 : body_len;
    c->out = malloc((size_t)hn + blen + 1);
    if (!c->out) {
        close(c->fd);
        c->fd = -1;
        return;
    }
    memcpy(c->out, hdr, (size_t)hn);
    if (blen)
        memcpy(c->out + hn, body, blen);
    c->out_len = (size_t)hn + blen;
    c->out_off = 0;
    c->deadline = mono_s() + IO_TIMEOUT_MS / 1000.0;
}

#define ANSWER_TEXT(c, code, reason, msg, head) \
    answer(c, code, reason, "text/plain; charset=utf-8", msg, sizeof msg - 1, head)

/* A complete request head: its answer (the metrics page rendered under state_lock). */
static void route(server *sv, conn *c, const od_http_request *req)
{
    int head = strcmp(req->method, "HEAD") == 0;
    if (!head && strcmp(req->method, "GET") != 0) {
        ANSWER_TEXT(c, 405, "Method Not Allowed", "only GET and HEAD\n", 0);
    } else if (strcmp(req->path, "/metrics") == 0) {
        od_promtext p;
        od_promtext_init(&p);
        pthread_mutex_lock(&state_lock);
        for (size_t d = 0; d < sv->n; d++)
            od_watch_classify(&sv->ws[d]->wt);
        render_metrics(sv->ws, sv->n, &p);
        pthread_mutex_unlock(&state_lock);
        if (p.oom)
            ANSWER_TEXT(c, 500, "Internal Server Error", "out of memory\n", head);
        else
            answer(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", p.data, p.len, head);
        od_promtext_free(&p);
    } else if (strcmp(req->path, "/") == 0) {
        ANSWER_TEXT(c, 200, "OK", "oomdoc watch: metrics at /metrics\n", head);
    } else {
        ANSWER_TEXT(c, 404, "Not Found", "not found: try /metrics\n", head);
    }
}

static void drop(conn *c)
{
    close(c->fd);
    c->fd = -1;
    free(c->out);
    c->out = NULL;
}

/* The connection is readable: read what is there; a complete head gets its answer, a
 * malformed or oversized one a 400, a closed one is dropped. */
static void on_readable(server *sv, conn *c)
{
    ssize_t k = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
    if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        drop(c);
        return;
    }
    if (k < 0)
        return;
    c->in_len += (size_t)k;
    od_http_request req;
    od_error err;
    int complete = 0;
    if (od_http_parse_request(c->in, c->in_len, &req, &complete, &err) != OD_OK)
        ANSWER_TEXT(c, 400, "Bad Request", "bad request\n", 0);
    else if (complete)
        route(sv, c, &req);
    else if (c->in_len == sizeof c->in)
        drop(c); /* cannot happen: the parser refuses a head this long */
}

/* The connection is writable: send what is left; all sent: close. */
static void on_writable(conn *c)
{
    ssize_t k = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        drop(c);
        return;
    }
    if (k > 0)
        c->out_off += (size_t)k;
    if (c->out_off == c->out_len)
        drop(c);
}

static void accept_some(server *sv)
{
    for (size_t i = 0; i < MAX_CONNS; i++) {
        conn *c = &sv->conns[i];
        if (c->fd >= 0)
            continue;
        int fd = accept(sv->lfd, NULL, NULL);
        if (fd < 0)
            return;
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        c->fd = fd;
        c->in_len = 0;
        c->out = NULL;
        c->deadline = mono_s() + IO_TIMEOUT_MS / 1000.0;
    }
}

static void *serve(void *arg)
{
    server *sv = arg;
    struct pollfd pf[MAX_CONNS + 2];
    size_t slot[MAX_CONNS + 2];
    for (;;) {
        double now = mono_s(), soonest = now + 1;
        size_t np = 0;
        int room = 0;
        pf[np++] = (struct pollfd){sv->wake[0], POLLIN, 0};
        for (size_t i = 0; i < MAX_CONNS; i++) {
            conn *c = &sv->conns[i];
            if (c->fd < 0) {
                room = 1;
                continue;
            }
            if (now >= c->deadline) {
                drop(c); /* too slow: the slot goes to someone else */
                room = 1;
                continue;
            }
            if (c->deadline < soonest)
                soonest = c->deadline;
            slot[np] = i;
            pf[np++] = (struct pollfd){c->fd, c->out ? POLLOUT : POLLIN, 0};
        }
        /* With every slot taken, new connections wait in the listen backlog. */
        size_t lpos = np;
        pf[np++] = (struct pollfd){sv->lfd, room ? POLLIN : 0, 0};
        int pr = poll(pf, np, (int)((soonest - now) * 1000) + 1);
        if (pr < 0 && errno != EINTR)
            break;
        if (pr <= 0)
            continue;
        if (pf[0].revents)
            break;
        for (size_t j = 1; j < lpos; j++) {
            conn *c = &sv->conns[slot[j]];
            if (!pf[j].revents)
                continue;
            if (c->out)
                on_writable(c);
            else
                on_readable(sv, c);
        }
        if (pf[lpos].revents & POLLIN)
            accept_some(sv);
    }
    return NULL;
}

/* Start the endpoint's thread on lfd; signals stay with the sampler's thread. Returns
 * 0, or -1 with errno (nothing started). */
static int server_start(server *sv, int lfd, watch_state *const *ws, size_t n)
{
    memset(sv, 0, sizeof *sv);
    sv->lfd = lfd;
    sv->ws = ws;
    sv->n = n;
    for (size_t i = 0; i < MAX_CONNS; i++)
        sv->conns[i].fd = -1;
    if (pipe(sv->wake) != 0)
        return -1;
    fcntl(sv->wake[0], F_SETFD, FD_CLOEXEC);
    fcntl(sv->wake[1], F_SETFD, FD_CLOEXEC);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int e = pthread_create(&sv->thread, NULL, serve, sv);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        close(sv->wake[0]);
        close(sv->wake[1]);
        errno = e;
        return -1;
    }
    sv->started = 1;
    return 0;
}

/* Stop the thread and close its connections (a server never started is fine). */
static void server_stop(server *sv)
{
    if (!sv->started)
        return;
    char b = 0;
    ssize_t w = write(sv->wake[1], &b, 1);
    (void)w;
    pthread_join(sv->thread, NULL);
    for (size_t i = 0; i < MAX_CONNS; i++)
        if (sv->conns[i].fd >= 0)
            drop(&sv->conns[i]);
    close(sv->wake[0]);
    close(sv->wake[1]);
    sv->started = 0;
}

/* ---- output ------------------------------------------------------------------------ */

static void fmt_rate(double bps, char *buf, size_t size)
{
    char b[32];
    od_format_iec((uint64_t)fabs(bps), b, sizeof b);
    snprintf(buf, size, "%s%s/s", bps < 0 ? "-" : "+", b);
}

static void fmt_secs(double s, char *buf, size_t size)
{
    if (s < 120)
        snprintf(buf, size, "%.1f s", s);
    else if (s < 7200)
        snprintf(buf, size, "%.1f min", s / 60);
    else
        snprintf(buf, size, "%.1f h", s / 3600);
}


/* The live table, when one is drawn: how many lines the last drawing took (the next one
 * starts that many lines up), 0 when something else was printed since. */
static int table_lines;

/* The warning when the alarm goes off (od_watch_sample, od_watch_check_alarm said so). */
static void print_alarm(const watch_state *w)
{
    const od_watch *wt = &w->wt;
    char r[48], s[32], u[32], c[32];
    fmt_rate(wt->tr.growth_bytes_per_second, r, sizeof r);
    fmt_secs(wt->tr.projected_oom_s, s, sizeof s);
    fprintf(stderr, "%soomdoc: watch: ALARM: GPU %u: projected OOM in %s (growing %s; %s of %s in use)\n",
            isatty(fileno(stderr)) ? "\r\033[K" : "", w->index, s, r, od_format_iec(wt->s.last_bytes, u, sizeof u),
            od_format_iec(wt->cfg.capacity_bytes, c, sizeof c));
    table_lines = 0; /* the table is drawn afresh below the alarm */
}


static void status_line(watch_state *const *ws, size_t n)
{
    double t = 0;
    for (size_t d = 0; d < n; d++)
        if (ws[d]->wt.s.last_t_s > t)
            t = ws[d]->wt.s.last_t_s;
    fprintf(stderr, "\r[oomdoc watch] %.1fs", t);
    for (size_t d = 0; d < n; d++) {
        const watch_state *w = ws[d];
        char u[32], p[32], extra[96] = "";
        if (w->wt.tr.verdict == OD_WTREND_LEAK) {
            char r[48], s[32] = "?";
            fmt_rate(w->wt.tr.growth_bytes_per_second, r, sizeof r);
            if (w->wt.tr.projected_oom_s >= 0)
                fmt_secs(w->wt.tr.projected_oom_s, s, sizeof s);
            snprintf(extra, sizeof extra, " leak %s, OOM in %s", r, s);
        } else if (w->wt.tr.verdict != OD_WTREND_UNKNOWN) {
            snprintf(extra, sizeof extra, " %s", od_wtrend_name(w->wt.tr.verdict));
        }
        od_format_iec(w->wt.s.last_bytes, u, sizeof u);
        if (!w->up)
            snprintf(extra, sizeof extra, " lost");
        if (n == 1)
            fprintf(stderr, " GPU %u used %s peak %s%s", w->index, u,
                    od_format_iec(w->wt.s.peak_bytes, p, sizeof p), extra);
        else
            fprintf(stderr, "%s GPU %u %s%s", d ? " |" : "", w->index, u, extra);
    }
    fputs("\033[K", stderr);
    fflush(stderr);
}


/* ---- the live table ------------------------------------------------------------------ */

/* 1 when the terminal takes UTF-8 (the locale says so): the bar is drawn in blocks. */
static int utf8_terminal(void)
{
    const char *v[] = {getenv("LC_ALL"), getenv("LC_CTYPE"), getenv("LANG")};
    for (int i = 0; i < 3; i++)
        if (v[i] && v[i][0])
            return strstr(v[i], "UTF-8") || strstr(v[i], "utf8") || strstr(v[i], "UTF8") || strstr(v[i], "utf-8");
    return 0;
}

/* line cut to cols columns (colour sequences kept, a reset added when cut). */
static void cut_columns(char *line, size_t cols)
{
    size_t i = 0, used = 0, len = strlen(line);
    while (i < len) {
        if (line[i] == 0x1b) { /* SGR: copied, no columns */
            size_t j = i + 1;
            while (j < len && line[j] != 'm')
                j++;
            i = j < len ? j + 1 : len;
            continue;
        }
        uint32_t cp;
        size_t n = od_utf8_decode(line + i, len - i, &cp);
        size_t w = n ? (size_t)od_char_width(cp) : 1;
        if (used + w > cols) {
            line[i] = 0;
            if (od_c_reset[0])
                strcat(line, od_c_reset);
            return;
        }
        used += w;
        i += n ? n : 1;
    }
}

/* A bar of width cells for part of whole. */
static void bar(char *buf, size_t size, uint64_t part, uint64_t whole, size_t width, int utf8)
{
    size_t fill = whole ? (size_t)((double)width * (double)part / (double)whole + 0.5) : 0;
    if (fill > width)
        fill = width;
    size_t o = 0;
    buf[o++] = '[';
    for (size_t i = 0; i < width && o + 4 < size; i++) {
        const char *c = utf8 ? (i < fill ? "\xe2\x96\x88" : "\xe2\x96\x91") : (i < fill ? "#" : ".");
        memcpy(buf + o, c, strlen(c));
        o += strlen(c);
    }
    buf[o++] = ']';
    buf[o] = 0;
}

static const char *verdict_colour(od_wtrend_verdict v)
{
    return v == OD_WTREND_LEAK ? od_c_red : v == OD_WTREND_SPIKE ? od_c_yellow : v == OD_WTREND_STABLE ? od_c_green
                                                                                                        : od_c_dim;
}

/* The trend as the table shows it: "leak +2.10 GiB/s", "stable", "lost". */
static void trend_text(const watch_state *w, char *buf, size_t size)
{
    char r[48];
    if (!w->up)
        snprintf(buf, size, "lost");
    else if (w->wt.tr.verdict == OD_WTREND_LEAK || w->wt.tr.verdict == OD_WTREND_SPIKE) {
        fmt_rate(w->wt.tr.growth_bytes_per_second, r, sizeof r);
        snprintf(buf, size, "%s %s", od_wtrend_name(w->wt.tr.verdict), r);
    } else
        snprintf(buf, size, "%s", od_wtrend_name(w->wt.tr.verdict));
}

/* The processes of a GPU, most memory first: "python3[4242] 15.56 GiB leak +2.1 GiB/s, ...". */
static void processes_text(const watch_state *w, char *buf, size_t size)
{
    size_t order[OD_WATCH_MAX_PROCS], n = w->wt.n_procs, o = 0;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = 1; i < n; i++) /* insertion sort: a few processes */
        for (size_t j = i; j > 0 && w->wt.procs[order[j]].s.last_bytes > w->wt.procs[order[j - 1]].s.last_bytes; j--) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    buf[0] = 0;
    for (size_t i = 0; i < n && i < 4 && o + 1 < size; i++) {
        const od_wproc *p = &w->wt.procs[order[i]];
        char name[64], u[32], r[48] = "";
        int k = od_cli_pid_name(p->pid, name, sizeof name);
        if (p->tr.verdict == OD_WTREND_LEAK) {
            char g[40];
            fmt_rate(p->tr.growth_bytes_per_second, g, sizeof g);
            snprintf(r, sizeof r, " %sleak %s%s", od_c_red, g, od_c_reset);
        }
        int m = snprintf(buf + o, size - o, "%s%s%s%u%s %s%s", i ? ", " : "", k ? od_cli_esc(name) : "", k ? "[" : "pid ",
                         (unsigned)p->pid, k ? "]" : "", od_format_iec(p->s.last_bytes, u, sizeof u), r);
        if (m < 0 || (size_t)m >= size - o)
            break;
        o += (size_t)m;
    }
    if (n > 4 && o + 1 < size)
        snprintf(buf + o, size - o, ", %zu more", n - 4);
}

/* Draw the table in place on the terminal: a title, a header, a row per GPU and its
 * processes under it, each line cut to the width; table_lines says how many. */
static void draw_table(watch_state *const *ws, size_t n, double t, double interval, int final)
{
    FILE *out = od_cli_raw_stdout();
    size_t width = od_cli_term_width();
    if (width < 20)
        width = 20;
    int utf8 = utf8_terminal();
    size_t name_w = 0;
    for (size_t d = 0; d < n; d++) {
        size_t l = od_text_width(ws[d]->name, strlen(ws[d]->name));
        if (l > name_w)
            name_w = l;
    }
    if (name_w > 18)
        name_w = 18;
    /* A row: GPU(4) NAME(name_w+2) USED / CAPACITY(23+1) [BAR](bw+2) PCT(6) (2) TREND(18+1)
     * OOM IN(8): 66 columns and the name and the bar. The name goes first when the bar
     * would be too short for it. */
    size_t room = width - 1;
    if (room < 66 + name_w + 2 + 10)
        name_w = 0;
    size_t bw = room > 66 + name_w + (name_w ? 2 : 0) + 10 ? room - 66 - name_w - (name_w ? 2 : 0) : 10;
    if (bw > 50)
        bw = 50;
    if (table_lines > 0)
        fprintf(out, "\033[%dA", table_lines);
    int lines = 0;
    char line[2048], b[512], u[32], c[32], tr[64], eta[32];
    char every[32];
    if (interval < 1) /* "every 100 ms" reads better than "every 0.1 s" */
        snprintf(every, sizeof every, "%.0f ms", interval * 1e3);
    else
        fmt_secs(interval, every, sizeof every);
    snprintf(line, sizeof line, "%soomdoc watch%s  %.1f s, a sample every %s%s", od_c_bold, od_c_reset, t, every,
             final ? "  (stopped)" : "  (Ctrl-C stops)");
    cut_columns(line, width - 1);
    fprintf(out, "\r%s\033[K\n", line);
    lines++;
    snprintf(line, sizeof line, "%s%-4s%-*s%s%-23s %-*s %5s  %-18s %8s%s", od_c_dim, "GPU", (int)name_w,
             name_w ? "NAME" : "", name_w ? "  " : "", "USED / CAPACITY", (int)bw + 2, "MEMORY", "", "TREND",
             "OOM IN", od_c_reset);
    cut_columns(line, width - 1);
    fprintf(out, "\r%s\033[K\n", line);
    lines++;
    for (size_t d = 0; d < n; d++) {
        const watch_state *w = ws[d];
        uint64_t cap = w->wt.cfg.capacity_bytes, used = w->wt.s.last_bytes;
        char nm[96 * 4];
        snprintf(nm, sizeof nm, "%s", od_cli_esc(w->name));
        cut_columns(nm, name_w);
        char uc[64];
        snprintf(uc, sizeof uc, "%s / %s", od_format_iec(used, u, sizeof u), od_format_iec(cap, c, sizeof c));
        bar(b, sizeof b, used, cap, bw, utf8);
        trend_text(w, tr, sizeof tr);
        eta[0] = 0;
        if (w->up && w->wt.tr.verdict == OD_WTREND_LEAK && w->wt.tr.projected_oom_s >= 0)
            fmt_secs(w->wt.tr.projected_oom_s, eta, sizeof eta);
        int pct = cap ? (int)(100.0 * (double)used / (double)cap + 0.5) : 0;
        /* The trend is padded to its 18 columns inside its colour. */
        char trp[64];
        snprintf(trp, sizeof trp, "%-18s", tr);
        snprintf(line, sizeof line, "%-4u%s%*s%s%-23s %s %4d%%  %s%s%s %s%8s%s", w->index, nm,
                 (int)(name_w > od_text_width(nm, strlen(nm)) ? name_w - od_text_width(nm, strlen(nm)) : 0), "",
                 name_w ? "  " : "", uc, b, pct, verdict_colour(w->up ? w->wt.tr.verdict : OD_WTREND_SPIKE), trp,
                 od_c_reset, eta[0] ? od_c_red : "", eta[0] ? eta : "-", od_c_reset);
        cut_columns(line, width - 1);
        fprintf(out, "\r%s\033[K\n", line);
        lines++;
        processes_text(w, b, sizeof b);
        snprintf(line, sizeof line, "    %s%s", w->wt.n_procs ? "processes: " : "no compute processes", b);
        cut_columns(line, width - 1);
        fprintf(out, "\r%s\033[K\n", line);
        lines++;
    }
    fputs("\033[J", out); /* a shorter table than the last: what was below goes */
    fflush(out);
    table_lines = lines;
}

static json_t *num_or_null(double v, int ok)
{
    return ok ? json_real(v) : json_null();
}

/* One GPU's part of the summary. */
static json_t *device_json(watch_state *w, double duration)
{
    json_t *d = json_object();
    int lost = w->lost;
    json_t *dev = json_object();
    json_object_set_new(dev, "index", json_integer(w->index));
    json_object_set_new(dev, "name", od_cli_json_str(w->name));
    json_object_set_new(dev, "uuid", od_cli_json_str(w->uuid));
    json_object_set_new(dev, "total_bytes", json_integer((json_int_t)w->total_bytes));
    json_object_set_new(dev, "capacity_bytes", json_integer((json_int_t)w->wt.cfg.capacity_bytes));
    json_object_set_new(dev, "memory_info_version", json_integer(w->mem_version));
    json_object_set_new(d, "device", dev);
    json_object_set_new(d, "samples", json_integer((json_int_t)w->wt.s.samples));
    json_object_set_new(d, "duration_s", json_real(duration));
    json_object_set_new(d, "device_lost", json_boolean(lost));
    json_object_set_new(d, "peak_bytes", json_integer((json_int_t)w->wt.s.peak_bytes));
    json_object_set_new(d, "peak_time_s", json_real(w->wt.s.peak_t_s));
    json_object_set_new(d, "last_bytes", json_integer((json_int_t)w->wt.s.last_bytes));
    json_t *tr = json_object();
    json_object_set_new(tr, "verdict", json_string(od_wtrend_name(w->wt.tr.verdict)));
    json_object_set_new(tr, "growth_bytes_per_second", json_real(w->wt.tr.growth_bytes_per_second));
    json_object_set_new(tr, "r2", json_real(w->wt.tr.r2));
    json_object_set_new(tr, "window_start_s", json_real(w->wt.tr.window_start_s));
    json_object_set_new(tr, "projected_oom_seconds",
                        num_or_null(w->wt.tr.projected_oom_s, w->wt.tr.projected_oom_s >= 0));
    json_object_set_new(d, "trend", tr);
    if (w->wt.cfg.alarm_s > 0) {
        json_t *a = json_object();
        json_object_set_new(a, "minutes", json_real(w->wt.cfg.alarm_s / 60));
        json_object_set_new(a, "raised", json_boolean(w->wt.alarm_raised));
        json_object_set_new(a, "first_time_s", num_or_null(w->wt.alarm_first_t_s, w->wt.alarm_raised));
        json_object_set_new(d, "alarm", a);
    } else {
        json_object_set_new(d, "alarm", json_null());
    }
    if (w->wt.cfg.follow_pid) {
        json_t *p = json_object();
        json_object_set_new(p, "pid", json_integer(w->wt.cfg.pid));
        json_object_set_new(p, "peak_bytes", json_integer((json_int_t)w->wt.pid_peak_bytes));
        json_object_set_new(p, "last_bytes", json_integer((json_int_t)w->wt.pid_last_bytes));
        json_object_set_new(d, "pid", p);
    }
    json_t *ps = json_array();
    for (size_t i = 0; i < w->wt.n_procs; i++) {
        const od_wproc *p = &w->wt.procs[i];
        json_t *o = json_object();
        json_object_set_new(o, "pid", json_integer(p->pid));
        json_object_set_new(o, "peak_bytes", json_integer((json_int_t)p->s.peak_bytes));
        json_object_set_new(o, "last_bytes", json_integer((json_int_t)p->s.last_bytes));
        json_object_set_new(o, "verdict", json_string(od_wtrend_name(p->tr.verdict)));
        json_object_set_new(o, "growth_bytes_per_second", json_real(p->tr.growth_bytes_per_second));
        json_object_set_new(o, "projected_oom_seconds", num_or_null(p->tr.projected_oom_s, p->tr.projected_oom_s >= 0));
        json_array_append_new(ps, o);
    }
    json_object_set_new(d, "processes", ps);
    return d;
}

/* One GPU: its fields at the top level; several: a "devices" list of them. */
static json_t *summary_json(watch_state *const *ws, size_t n, double duration, char **cmd, int cmd_rc)
{
    json_t *d = json_object();
    json_object_set_new(d, "schema_version", json_integer(1));
    if (n == 1) {
        json_t *one = device_json(ws[0], duration);
        json_object_update(d, one);
        json_decref(one);
    } else {
        json_t *list = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(list, device_json(ws[i], duration));
        json_object_set_new(d, "devices", list);
    }
    if (cmd) {
        json_t *c = json_object(), *argv = json_array();
        for (char **a = cmd; *a; a++)
            json_array_append_new(argv, od_cli_json_str(*a));
        json_object_set_new(c, "argv", argv);
        json_object_set_new(c, "exit_code", json_integer(cmd_rc));
        json_object_set_new(d, "command", c);
    } else {
        json_object_set_new(d, "command", json_null());
    }
    return d;
}


static void summary_text(watch_state *w, double duration)
{
    int lost = w->lost;
    char a[32], b[32], r[48], s[32];
    fprintf(stderr, "oomdoc watch: GPU %u (%s, %s): %llu samples over %.2f s%s\n", w->index, od_cli_esc(w->name),
            od_cli_esc(w->uuid), (unsigned long long)w->wt.s.samples, duration, lost ? " (device lost)" : "");
    fprintf(stderr, "  peak %s at %.2f s (capacity %s)\n", od_format_iec(w->wt.s.peak_bytes, a, sizeof a),
            w->wt.s.peak_t_s, od_format_iec(w->wt.cfg.capacity_bytes, b, sizeof b));
    fmt_rate(w->wt.tr.growth_bytes_per_second, r, sizeof r);
    if (w->wt.tr.verdict == OD_WTREND_UNKNOWN) {
        fprintf(stderr, "  trend: unknown (too few samples)\n");
    } else {
        fprintf(stderr, "  trend: %s, %s since %.2f s (r2 %.2f)", od_wtrend_name(w->wt.tr.verdict), r,
                w->wt.tr.window_start_s, w->wt.tr.r2);
        if (w->wt.tr.projected_oom_s >= 0) {
            fmt_secs(w->wt.tr.projected_oom_s, s, sizeof s);
            fprintf(stderr, "; projected OOM in %s", s);
        }
        fputc('\n', stderr);
    }
    if (w->wt.alarm_raised)
        fprintf(stderr, "  alarm raised at %.2f s\n", w->wt.alarm_first_t_s);
    if (w->wt.cfg.follow_pid)
        fprintf(stderr, "  PID %u: peak %s\n", (unsigned)w->wt.cfg.pid,
                od_format_iec(w->wt.pid_peak_bytes, a, sizeof a));
    for (size_t i = 0; i < w->wt.n_procs && i < 8; i++) {
        const od_wproc *p = &w->wt.procs[i];
        fmt_rate(p->tr.growth_bytes_per_second, r, sizeof r);
        if (p->tr.verdict == OD_WTREND_UNKNOWN)
            r[0] = 0;
        fprintf(stderr, "  process %u: peak %s, trend %s%s%s\n", (unsigned)p->pid,
                od_format_iec(p->s.peak_bytes, a, sizeof a), od_wtrend_name(p->tr.verdict),
                r[0] ? " " : "", r);
    }
}


/* ---- the command --------------------------------------------------------------------- */

static pid_t start_command(char **cmd)
{
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "oomdoc: watch: cannot start a process: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvp(cmd[0], cmd);
        int e = errno;
        fprintf(stderr, "oomdoc: watch: cannot run '%s': %s\n", od_cli_name(cmd[0]), strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    return pid;
}


/* ---- options ---------------------------------------------------------------------- */

typedef struct {
    double interval, duration, alarm_min;
    long device, pid;
    uint64_t capacity;
    const char *out_path, *prom, *lib;
    int json, pid_opt, all_devices;
    char **cmd;
} watch_opts;

/* The options into *o. 0 to go on; otherwise the exit code (--help: *o->... untouched,
 * OD_EXIT_OK with *done set). */
static int parse_options(int argc, char **argv, watch_opts *o, int *done)
{
    static const struct option opts[] = {
        {"interval", required_argument, NULL, 'i'},
        {"device", required_argument, NULL, 'd'},
        {"pid", required_argument, NULL, 'p'},
        {"out", required_argument, NULL, 'o'},
        {"capacity", required_argument, NULL, 'c'},
        {"alarm", required_argument, NULL, 'a'},
        {"duration", required_argument, NULL, 'D'},
        {"prometheus", required_argument, NULL, 'P'},
        {"json", no_argument, NULL, 'j'},
        {"nvml-lib", required_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->interval = 0.1;
    *done = 0;
    int c;
    optind = 1;
    opterr = 0; /* the refusal is ours, in one line */
    /* '+': options end at the command (or at "--"), whose own options are its business. */
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'i':
            if (parse_duration("--interval", optarg, 0.001, &o->interval))
                return OD_EXIT_USAGE;
            break;
        case 'D':
            if (parse_duration("--duration", optarg, 0.001, &o->duration))
                return OD_EXIT_USAGE;
            break;
        case 'd':
            if (strcmp(optarg, "all") == 0)
                o->all_devices = 1;
            else if (od_cli_parse_int_opt("watch", "--device", optarg, 0, 4095, &o->device))
                return OD_EXIT_USAGE;
            else
                o->all_devices = 0;
            break;
        case 'p':
            if (od_cli_parse_int_opt("watch", "--pid", optarg, 1, 0xffffffffL, &o->pid))
                return OD_EXIT_USAGE;
            o->pid_opt = 1;
            break;
        case 'o': o->out_path = optarg; break;
        case 'c':
            if (od_cli_parse_size_opt("watch", "--capacity", optarg, &o->capacity))
                return OD_EXIT_USAGE;
            if (o->capacity == 0)
                return od_cli_usage_error("watch", "--capacity: must be more than 0 bytes");
            break;
        case 'a': {
            char *end;
            errno = 0;
            o->alarm_min = strtod(optarg, &end);
            if (end == optarg || *end || errno || !isfinite(o->alarm_min) || o->alarm_min <= 0 || o->alarm_min > 1e6)
                return od_cli_usage_error("watch", "--alarm: '%s' is not a number of minutes above 0", od_cli_name(optarg));
            break;
        }
        case 'P': o->prom = optarg; break;
        case 'j': o->json = 1; break;
        case 'L': o->lib = optarg; break;
        case 'h':
            usage();
            *done = 1;
            return OD_EXIT_OK;
        default: return od_cli_unknown_option("watch", "+h", opts, argv);
        }
    }
    o->cmd = optind < argc ? argv + optind : NULL;
    if (o->cmd && optind > 0 && strcmp(argv[optind - 1], "--") != 0)
        return od_cli_usage_error("watch", "unexpected argument '%s' (put the command after --)", od_cli_name(argv[optind]));
    return 0;
}

/* ---- the series ---------------------------------------------------------------------- */

/* One sample's row. Flushed per sample: the file is complete up to the moment of a crash,
 * and a pipe's reader sees each row as it comes. */
static void series_row(series_out *so, const watch_state *w, double t, uint64_t used)
{
    if (!so || !so->f || so->failed)
        return;
    unsigned long long u = used, pu = w->wt.pid_last_bytes;
    char gpu[32] = "";
    int k;
    if (so->jsonl) {
        if (so->gpu_column)
            snprintf(gpu, sizeof gpu, ",\"gpu\":%u", w->index);
        if (so->pid_column)
            k = fprintf(so->f, "{\"time_s\":%.3f%s,\"used_bytes\":%llu,\"process_used_bytes\":%llu}\n", t, gpu, u, pu);
        else
            k = fprintf(so->f, "{\"time_s\":%.3f%s,\"used_bytes\":%llu}\n", t, gpu, u);
    } else {
        if (so->gpu_column)
            snprintf(gpu, sizeof gpu, ",%u", w->index);
        if (so->pid_column)
            k = fprintf(so->f, "%.3f%s,%llu,%llu\n", t, gpu, u, pu);
        else
            k = fprintf(so->f, "%.3f%s,%llu\n", t, gpu, u);
    }
    if (k < 0 || fflush(so->f) != 0) {
        so->failed = 1;
        fprintf(stderr, "oomdoc: watch: %s: cannot write: %s (sampling goes on)\n", od_cli_name(so->path),
                od_cli_errno_text(errno));
        table_lines = 0;
    }
}

/* The series' targets: outs[0..*n_outs), each GPU pointing at its own. A file is created
 * as a temporary and published (renamed over the target) once its header is in. */
static int open_series(const watch_opts *o, watch_state **ws, size_t n, int to_stdout, series_out *outs,
                       size_t *n_outs)
{
    *n_outs = 0;
    if (!to_stdout && !o->out_path)
        return 0; /* the table (or nothing): no series */
    int per_gpu = !to_stdout && strstr(o->out_path, "{gpu}") != NULL;
    size_t count = per_gpu ? n : 1;
    for (size_t k = 0; k < count; k++) {
        series_out *so = &outs[k];
        memset(so, 0, sizeof *so);
        so->gpu_column = !per_gpu && n > 1;
        so->pid_column = o->pid_opt;
        if (to_stdout) {
            so->f = od_cli_raw_stdout();
            snprintf(so->path, sizeof so->path, "<stdout>");
        } else {
            /* {gpu} -> the NVML index */
            char *d = so->path;
            size_t room = sizeof so->path;
            for (const char *q = o->out_path; *q && room > 1;) {
                if (strncmp(q, "{gpu}", 5) == 0) {
                    int m = snprintf(d, room, "%u", ws[k]->index);
                    if (m < 0 || (size_t)m >= room)
                        break;
                    d += m;
                    room -= (size_t)m;
                    q += 5;
                } else {
                    *d++ = *q++;
                    room--;
                }
            }
            *d = 0;
            size_t l = strlen(so->path);
            so->jsonl = l >= 6 && strcmp(so->path + l - 6, ".jsonl") == 0;
            int rc = od_cli_safe_open(&so->file, so->path);
            if (rc)
                return rc;
            so->f = so->file.f;
        }
        (*n_outs)++;
        for (size_t d = 0; d < n; d++)
            if (per_gpu ? d == k : 1)
                ws[d]->out = so;
    }
    return 0;
}

/* Headers in, files published. */
static int start_series(series_out *outs, size_t n_outs)
{
    for (size_t k = 0; k < n_outs; k++) {
        series_out *so = &outs[k];
        if (!so->jsonl)
            fprintf(so->f, "time_s%s,used_bytes%s\n", so->gpu_column ? ",gpu" : "",
                    so->pid_column ? ",process_used_bytes" : "");
        if (so->file.f) {
            int rc = od_cli_safe_publish(&so->file);
            if (rc) {
                so->f = NULL;
                return rc;
            }
        } else {
            fflush(so->f);
        }
    }
    return 0;
}

static void close_series(series_out *outs, size_t n_outs)
{
    for (size_t k = 0; k < n_outs; k++) {
        if (outs[k].file.f)
            od_cli_safe_abort(&outs[k].file); /* never published: the old file stays */
        else if (outs[k].f && outs[k].f != stdout && outs[k].f != od_cli_raw_stdout())
            fclose(outs[k].f);
        outs[k].f = NULL;
    }
}

/* ---- sampling ------------------------------------------------------------------------- */

/* One sample of one GPU: memory, processes, the series row, trend and alarm. */
static void sample(od_nvml *nv, watch_state *w, double t, od_nvml_process *procs, int tty)
{
    od_nvml_memory mem;
    od_error err;
    od_error_clear(&err);
    if (od_nvml_memory_info(nv, w->dev, &mem, &err) != OD_OK) {
        pthread_mutex_lock(&state_lock); /* the endpoint shows up */
        w->up = 0;
        w->lost = 1;
        pthread_mutex_unlock(&state_lock);
        fprintf(stderr, "%soomdoc: watch: GPU %u: %s: sampling stops at %.2f s\n",
                tty ? "\r\033[K" : "", w->index, od_cli_name(err.msg), t);
        table_lines = 0;
        return;
    }
    size_t np = 0;
    if (od_nvml_processes(nv, w->dev, procs, NVML_PROCS, &np, NULL, &err) != OD_OK)
        np = 0; /* a process ending mid-call, or no permission: device figures still stand */
    pthread_mutex_lock(&state_lock);
    w->listed = np;
    int alarm = od_watch_sample(&w->wt, t, mem.used_bytes, procs, np);
    if (alarm)
        print_alarm(w);
    pthread_mutex_unlock(&state_lock);
    series_row(w->out, w, t, mem.used_bytes);
}

/* The GPUs to watch: NVML's view of each, and lib/watchtrend's state. 0, or the exit
 * code after the error line. */
static int open_gpus(od_nvml *nv, const watch_opts *o, watch_state ***out, size_t *n_out)
{
    od_error err;
    od_error_clear(&err);
    unsigned count = 0;
    if (od_nvml_device_count(nv, &count, &err) != OD_OK)
        return od_cli_report_error("watch", &err);
    if (count == 0) {
        fprintf(stderr, "oomdoc: watch: NVML is loaded but sees no GPU\n");
        return OD_EXIT_NODEV;
    }
    if (!o->all_devices && (unsigned long)o->device >= count) {
        fprintf(stderr, "oomdoc: watch: --device %ld: NVML sees %u GPU%s (0..%u)\n", o->device, count,
                count == 1 ? "" : "s", count - 1);
        return OD_EXIT_NODEV;
    }
    size_t n = o->all_devices ? count : 1;
    watch_state **ws = calloc(n, sizeof *ws);
    if (!ws)
        return OD_EXIT_INTERNAL;
    *out = ws;
    *n_out = n;
    for (size_t d = 0; d < n; d++) {
        watch_state *w = ws[d] = calloc(1, sizeof *w);
        if (!w) {
            fprintf(stderr, "oomdoc: watch: out of memory\n");
            return OD_EXIT_INTERNAL;
        }
        w->index = o->all_devices ? (unsigned)d : (unsigned)o->device;
        od_nvml_memory mem;
        if (od_nvml_device_get(nv, w->index, &w->dev, &err) != OD_OK ||
            od_nvml_device_name(nv, w->dev, w->name, sizeof w->name, &err) != OD_OK ||
            od_nvml_device_uuid(nv, w->dev, w->uuid, sizeof w->uuid, &err) != OD_OK ||
            od_nvml_memory_info(nv, w->dev, &mem, &err) != OD_OK) {
            fprintf(stderr, "oomdoc: watch: GPU %u: %s\n", w->index, od_cli_name(err.msg));
            return OD_EXIT_NODEV;
        }
        /* v2's used excludes the reserve: what can fill up is total less the reserve. */
        od_watch_config cfg = {o->capacity ? o->capacity : mem.total_bytes - (mem.version == 2 ? mem.reserved_bytes : 0),
                               o->alarm_min * 60, o->interval, o->pid_opt, (uint32_t)o->pid};
        if (od_watch_init(&w->wt, &cfg, &err) != OD_OK) {
            fprintf(stderr, "oomdoc: watch: out of memory\n");
            return OD_EXIT_INTERNAL;
        }
        w->up = 1;
        w->total_bytes = mem.total_bytes;
        w->mem_version = mem.version;
    }
    return 0;
}

/* How the run shows itself while it lasts. */
typedef enum { SHOW_NOTHING, SHOW_STATUS_LINE, SHOW_TABLE } live_view;

typedef struct {
    int any_lost, any_write_failed, cmd_rc, have_child;
    double t0;
} run_result;

/* Sample every GPU on the interval's grid until --duration, a signal, the command's end
 * or the loss of every GPU; show the live view as it goes. */
static void run_loop(od_nvml *nv, const watch_opts *o, watch_state **ws, size_t n, od_nvml_process *procs,
                     live_view view, run_result *r)
{
    int tty = isatty(fileno(stderr));
    double duration = o->duration;
    double t0 = r->t0 = mono_s(), next = t0, last_shown = -1;
    for (;;) {
        double now = mono_s();
        int any_up = 0;
        for (size_t d = 0; d < n; d++)
            any_up |= ws[d]->up;
        if (any_up && now >= next) {
            double t = now - t0;
            for (size_t d = 0; d < n; d++) {
                watch_state *w = ws[d];
                if (w->up)
                    sample(nv, w, t, procs, tty);
                r->any_lost |= w->lost;
                r->any_write_failed |= w->out && w->out->failed;
            }
            if (view != SHOW_NOTHING && (t - last_shown >= 0.25 || last_shown < 0)) {
                pthread_mutex_lock(&state_lock);
                if (view == SHOW_TABLE)
                    draw_table(ws, n, t, o->interval, 0);
                else
                    status_line(ws, n);
                pthread_mutex_unlock(&state_lock);
                last_shown = t;
            }
            /* The next tick: on the grid, but a late tick (suspended, slow NVML) is skipped
             * rather than caught up in a burst. */
            next += o->interval;
            if (next < now)
                next = now + o->interval;
        }
        if (r->have_child && child_done) {
            int st;
            pid_t p = waitpid(child_pid, &st, WNOHANG);
            if (p == child_pid) {
                r->cmd_rc = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 70;
                child_pid = 0;
                break;
            }
            child_done = 0;
        }
        if (stop_requested && !r->have_child)
            break;
        if (duration > 0 && mono_s() - t0 >= duration) {
            if (r->have_child) {
                /* --duration with a command: the command is asked to stop. */
                kill(child_pid, SIGTERM);
                duration = 0;
            } else {
                break;
            }
        }
        any_up = 0;
        for (size_t d = 0; d < n; d++)
            any_up |= ws[d]->up;
        if (!any_up && !r->have_child)
            break;
        double wait = any_up ? next - mono_s() : 0.2;
        if (duration > 0) {
            double left = t0 + duration - mono_s();
            if (left < wait)
                wait = left;
        }
        if (wait < 0)
            wait = 0;
        poll(NULL, 0, (int)(wait * 1000.0 + 0.999)); /* a signal ends it early */
    }
}

/* ---- main ------------------------------------------------------------------------------ */

int od_cmd_watch(int argc, char **argv)
{
    watch_opts o;
    int done, rc = parse_options(argc, argv, &o, &done);
    if (rc || done)
        return rc;
    od_cli_color_init();
    /* Where the series goes: --out FILE, --out - (stdout), or stdout when it is not a
     * terminal (a pipe, a file); on a terminal without --out a live table instead. */
    int to_stdout = o.out_path ? strcmp(o.out_path, "-") == 0 : !od_cli_stdout_tty();
    if (o.json && to_stdout)
        return od_cli_usage_error("watch", "--json writes the summary to stdout: give the series a file with --out");
    /* With a command the terminal is the command's too: a one-line status on stderr. */
    live_view view = !to_stdout && od_cli_stdout_tty() && !o.cmd ? SHOW_TABLE
                     : isatty(fileno(stderr))                      ? SHOW_STATUS_LINE
                                                                   : SHOW_NOTHING;
    od_nvml *nv = od_cli_nvml_open("watch", o.lib, &rc);
    if (!nv)
        return rc;
    watch_state **ws = NULL;
    size_t n = 0, n_outs = 0;
    series_out *outs = NULL;
    int lfd = -1;
    run_result r = {0};
    static server sv; /* static: its buffers are large for a stack; started once */
    od_nvml_process *procs = malloc(NVML_PROCS * sizeof *procs);
    if (!procs) {
        fprintf(stderr, "oomdoc: watch: out of memory\n");
        rc = OD_EXIT_INTERNAL;
        goto done;
    }
    if ((rc = open_gpus(nv, &o, &ws, &n)))
        goto done;
    if (!(outs = calloc(n, sizeof *outs))) {
        rc = OD_EXIT_INTERNAL;
        goto done;
    }
    if ((rc = open_series(&o, ws, n, to_stdout, outs, &n_outs)))
        goto done;
    if (o.prom) {
        char shown[200];
        lfd = listen_on(o.prom, shown, sizeof shown);
        if (lfd < 0) {
            rc = lfd == -2 ? OD_EXIT_USAGE : OD_EXIT_INTERNAL;
            goto done;
        }
        fprintf(stderr, "oomdoc: watch: serving Prometheus metrics on %s\n", shown);
    }
    if ((rc = start_series(outs, n_outs)))
        goto done;
    install_signals();
    if (o.cmd) {
        pid_t c_pid = start_command(o.cmd);
        if (c_pid < 0) {
            rc = OD_EXIT_INTERNAL;
            goto done;
        }
        child_pid = c_pid;
        r.have_child = 1;
    }
    /* Started after the fork: the command's process never holds a copy of this thread's
     * locks. */
    if (lfd >= 0 && server_start(&sv, lfd, ws, n) != 0) {
        fprintf(stderr, "oomdoc: watch: --prometheus: cannot start the endpoint: %s\n", strerror(errno));
        rc = OD_EXIT_INTERNAL;
        goto done;
    }
    run_loop(nv, &o, ws, n, procs, view, &r);
    server_stop(&sv);
    if (view == SHOW_STATUS_LINE)
        fputs("\r\033[K", stderr);
    double dur = 0;
    for (size_t d = 0; d < n; d++) {
        od_watch_classify(&ws[d]->wt);
        /* The last samples can bring the projection within the alarm after the last
         * periodic check: warn now rather than never. */
        if (od_watch_check_alarm(&ws[d]->wt))
            print_alarm(ws[d]);
        if (ws[d]->wt.s.samples && ws[d]->wt.s.last_t_s > dur)
            dur = ws[d]->wt.s.last_t_s;
    }
    if (view == SHOW_TABLE)
        draw_table(ws, n, dur, o.interval, 1);
    if (o.json) {
        int jr = od_cli_print_json(summary_json(ws, n, dur, o.cmd, r.cmd_rc));
        if (jr)
            rc = jr;
    } else {
        for (size_t d = 0; d < n; d++)
            summary_text(ws[d], dur);
    }
    if (o.cmd)
        rc = r.cmd_rc;
    else if (r.any_lost)
        rc = OD_EXIT_NODEV;
    else if (r.any_write_failed)
        rc = OD_EXIT_INPUT;
done:
    server_stop(&sv);
    if (child_pid > 0) {
        kill(child_pid, SIGTERM);
        waitpid(child_pid, NULL, 0);
        child_pid = 0;
    }
    if (lfd >= 0)
        close(lfd);
    close_series(outs, n_outs);
    for (size_t d = 0; ws && d < n; d++) {
        if (ws[d])
            od_watch_free(&ws[d]->wt);
        free(ws[d]);
    }
    free(ws);
    free(outs);
    free(procs);
    od_nvml_close(nv);
    return rc;
}
