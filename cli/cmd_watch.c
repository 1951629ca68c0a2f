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
           "Sample a GPU's memory in use (and that of its processes) through NVML. Writes\n"
           "CSV time_s,used_bytes[,process_used_bytes] (JSON Lines when --out ends in .jsonl),\n"
           "the series `oomdoc trend` reads; time_s counts from the start on a monotonic clock.\n"
           "On a terminal a live status line is shown on stderr. At the end: the trend verdict\n"
           "(leak, stable, spike), the growth per second, the projected time to OOM, the peak.\n"
           "With -- COMMAND: runs it, forwards signals to it, stops when it ends and exits\n"
           "with its exit status.\n"
           "\n"
           "Options:\n"
           "  --interval DURATION   time between samples: 100ms (default), 0.5s, 2s, 1m\n"
           "  --device N|all        NVML index of the GPU to watch (default 0; see oomdoc gpus);\n"
           "                        all: every GPU (one series each: --out needs {gpu})\n"
           "  --pid PID             add process_used_bytes: the memory NVML attributes to PID\n"
           "  --out FILE            write the series to FILE (default: stdout); *.jsonl: JSON Lines;\n"
           "                        {gpu} in FILE is replaced by the GPU's index\n"
           "  --capacity SIZE       memory to project OOM against (default: the GPU's total\n"
           "                        less the driver reserve); e.g. 80GiB\n"
           "  --alarm MINUTES       warn on stderr as soon as the projected OOM is that close\n"
           "  --duration DURATION   stop after this long (default: until COMMAND ends, or\n"
           "                        SIGINT/SIGTERM)\n"
           "  --prometheus [HOST]:PORT  serve /metrics in Prometheus text format on its own\n"
           "                        thread; HOST defaults to 127.0.0.1 (0.0.0.0 or [::]: every\n"
           "                        interface, which watch points out); port 0: any free port;\n"
           "                        the address is printed on stderr\n"
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
    int lost;
    FILE *out;         /* the series (NULL: not written) */
    od_safe_file out_file; /* until the series replaces the old file */
    char out_path[512];
    int jsonl, write_failed;
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
        return od_cli_usage_error("watch", "--prometheus: bad port '%s'", port), -2;
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
            if (strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0)
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

/* The warning when the alarm goes off (od_watch_sample, od_watch_check_alarm said so). */
static void print_alarm(const watch_state *w)
{
    const od_watch *wt = &w->wt;
    char r[48], s[32], u[32], c[32];
    fmt_rate(wt->tr.growth_bytes_per_second, r, sizeof r);
    fmt_secs(wt->tr.projected_oom_s, s, sizeof s);
    fprintf(stderr, "%soomdoc: watch: ALARM: GPU %u: projected OOM in %s (growing %s; %s of %s in use)\n",
            od_cli_color(stderr) ? "\r\033[K" : "", w->index, s, r, od_format_iec(wt->s.last_bytes, u, sizeof u),
            od_format_iec(wt->cfg.capacity_bytes, c, sizeof c));
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
    json_object_set_new(dev, "name", json_string(w->name));
    json_object_set_new(dev, "uuid", json_string(w->uuid));
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
            json_array_append_new(argv, json_string(*a));
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
    fprintf(stderr, "oomdoc watch: GPU %u (%s, %s): %llu samples over %.2f s%s\n", w->index, w->name,
            w->uuid, (unsigned long long)w->wt.s.samples, duration, lost ? " (device lost)" : "");
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
        fprintf(stderr, "oomdoc: watch: cannot run '%s': %s\n", cmd[0], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    return pid;
}

/* ---- main ------------------------------------------------------------------------------ */

/* One sample of one GPU: memory, processes, the series line, trend and alarm. */
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
                tty ? "\r\033[K" : "", w->index, err.msg, t);
        return;
    }
    size_t np = 0;
    if (od_nvml_processes(nv, w->dev, procs, NVML_PROCS, &np, NULL, &err) != OD_OK)
        np = 0; /* a process ending mid-call, or no permission: device figures still stand */
    pthread_mutex_lock(&state_lock);
    int alarm = od_watch_sample(&w->wt, t, mem.used_bytes, procs, np);
    if (alarm)
        print_alarm(w);
    pthread_mutex_unlock(&state_lock);
    if (w->out && !w->write_failed) {
        int k;
        unsigned long long u = mem.used_bytes, pu = w->wt.pid_last_bytes;
        if (w->jsonl && w->wt.cfg.follow_pid)
            k = fprintf(w->out, "{\"time_s\":%.3f,\"used_bytes\":%llu,\"process_used_bytes\":%llu}\n", t, u, pu);
        else if (w->jsonl)
            k = fprintf(w->out, "{\"time_s\":%.3f,\"used_bytes\":%llu}\n", t, u);
        else if (w->wt.cfg.follow_pid)
            k = fprintf(w->out, "%.3f,%llu,%llu\n", t, u, pu);
        else
            k = fprintf(w->out, "%.3f,%llu\n", t, u);
        /* Flushed per sample: the file is complete up to the moment of a crash. */
        if (k < 0 || fflush(w->out) != 0) {
            w->write_failed = 1;
            fprintf(stderr, "oomdoc: watch: %s: cannot write: %s (sampling goes on)\n", od_cli_name(w->out_path),
                    strerror(errno));
        }
    }
}

int od_cmd_watch(int argc, char **argv)
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
    double interval = 0.1, duration = 0, alarm_min = 0;
    long device = 0, pid = 0;
    uint64_t capacity = 0;
    const char *out_path = NULL, *prom = NULL, *lib = NULL;
    int json = 0, pid_opt = 0, all_devices = 0, c;
    optind = 1;
    opterr = 0; /* the refusal is ours, in one line */
    /* '+': options end at the command (or at "--"), whose own options are its business. */
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'i':
            if (parse_duration("--interval", optarg, 0.001, &interval))
                return OD_EXIT_USAGE;
            break;
        case 'D':
            if (parse_duration("--duration", optarg, 0.001, &duration))
                return OD_EXIT_USAGE;
            break;
        case 'd':
            if (strcmp(optarg, "all") == 0)
                all_devices = 1;
            else if (od_cli_parse_int_opt("watch", "--device", optarg, 0, 4095, &device))
                return OD_EXIT_USAGE;
            else
                all_devices = 0;
            break;
        case 'p':
            if (od_cli_parse_int_opt("watch", "--pid", optarg, 1, 0xffffffffL, &pid))
                return OD_EXIT_USAGE;
            pid_opt = 1;
            break;
        case 'o': out_path = optarg; break;
        case 'c':
            if (od_cli_parse_size_opt("watch", "--capacity", optarg, &capacity))
                return OD_EXIT_USAGE;
            if (capacity == 0)
                return od_cli_usage_error("watch", "--capacity: must be more than 0 bytes");
            break;
        case 'a': {
            char *end;
            errno = 0;
            alarm_min = strtod(optarg, &end);
            if (end == optarg || *end || errno || !isfinite(alarm_min) || alarm_min <= 0 || alarm_min > 1e6)
                return od_cli_usage_error("watch", "--alarm: '%s' is not a number of minutes above 0", optarg);
            break;
        }
        case 'P': prom = optarg; break;
        case 'j': json = 1; break;
        case 'L': lib = optarg; break;
        case 'h': usage(); return OD_EXIT_OK;
        default: return od_cli_unknown_option("watch", "+h", opts, argv);
        }
    }
    char **cmd = optind < argc ? argv + optind : NULL;
    if (cmd && optind > 0 && strcmp(argv[optind - 1], "--") != 0)
        return od_cli_usage_error("watch", "unexpected argument '%s' (put the command after --)", argv[optind]);
    od_cli_color_init();

    int rc = OD_EXIT_OK;
    od_nvml *nv = od_cli_nvml_open("watch", lib, &rc);
    if (!nv)
        return rc;
    watch_state **ws = NULL;
    size_t n = 0;
    int lfd = -1, any_lost = 0, any_write_failed = 0, cmd_rc = 0, have_child = 0;
    static server sv; /* static: its buffers are large for a stack; started once */
    od_nvml_process *procs = malloc(NVML_PROCS * sizeof *procs);
    od_error err;
    od_error_clear(&err);
    unsigned count = 0;
    if (!procs) {
        fprintf(stderr, "oomdoc: watch: out of memory\n");
        rc = OD_EXIT_INTERNAL;
        goto done;
    }
    if (od_nvml_device_count(nv, &count, &err) != OD_OK) {
        rc = od_cli_report_error("watch", &err);
        goto done;
    }
    if (count == 0) {
        fprintf(stderr, "oomdoc: watch: NVML is loaded but sees no GPU\n");
        rc = OD_EXIT_NODEV;
        goto done;
    }
    if (!all_devices && (unsigned long)device >= count) {
        fprintf(stderr, "oomdoc: watch: --device %ld: NVML sees %u GPU%s (0..%u)\n", device, count,
                count == 1 ? "" : "s", count - 1);
        rc = OD_EXIT_NODEV;
        goto done;
    }
    n = all_devices ? count : 1;
    if (n > 1 && out_path && !strstr(out_path, "{gpu}")) {
        rc = od_cli_usage_error("watch", "--out: with several GPUs, put {gpu} in the name (run.gpu{gpu}.csv): one series per GPU");
        goto done;
    }
    ws = calloc(n, sizeof *ws);
    if (!ws) {
        rc = OD_EXIT_INTERNAL;
        goto done;
    }
    for (size_t d = 0; d < n; d++) {
        watch_state *w = ws[d] = calloc(1, sizeof *w);
        if (!w) {
            fprintf(stderr, "oomdoc: watch: out of memory\n");
            rc = OD_EXIT_INTERNAL;
            goto done;
        }
        w->index = all_devices ? (unsigned)d : (unsigned)device;
        od_nvml_memory mem;
        if (od_nvml_device_get(nv, w->index, &w->dev, &err) != OD_OK ||
            od_nvml_device_name(nv, w->dev, w->name, sizeof w->name, &err) != OD_OK ||
            od_nvml_device_uuid(nv, w->dev, w->uuid, sizeof w->uuid, &err) != OD_OK ||
            od_nvml_memory_info(nv, w->dev, &mem, &err) != OD_OK) {
            fprintf(stderr, "oomdoc: watch: GPU %u: %s\n", w->index, err.msg);
            rc = OD_EXIT_NODEV;
            goto done;
        }
        /* v2's used excludes the reserve: what can fill up is total less the reserve. */
        od_watch_config cfg = {capacity ? capacity : mem.total_bytes - (mem.version == 2 ? mem.reserved_bytes : 0),
                               alarm_min * 60, interval, pid_opt, (uint32_t)pid};
        if (od_watch_init(&w->wt, &cfg, &err) != OD_OK) {
            fprintf(stderr, "oomdoc: watch: out of memory\n");
            rc = OD_EXIT_INTERNAL;
            goto done;
        }
        w->up = 1;
        w->total_bytes = mem.total_bytes;
        w->mem_version = mem.version;
        if (!out_path || strcmp(out_path, "-") == 0) {
            if (n == 1)
                w->out = stdout; /* several GPUs without --out: no series, the summary only */
            snprintf(w->out_path, sizeof w->out_path, "<stdout>");
        } else {
            /* {gpu} -> the NVML index */
            char *o = w->out_path;
            size_t room = sizeof w->out_path;
            for (const char *q = out_path; *q && room > 1;) {
                if (strncmp(q, "{gpu}", 5) == 0) {
                    int k = snprintf(o, room, "%u", w->index);
                    if (k < 0 || (size_t)k >= room)
                        break;
                    o += k;
                    room -= (size_t)k;
                    q += 5;
                } else {
                    *o++ = *q++;
                    room--;
                }
            }
            *o = 0;
            size_t l = strlen(w->out_path);
            w->jsonl = l >= 6 && strcmp(w->out_path + l - 6, ".jsonl") == 0;
            /* A temporary beside the target, renamed over it once the header is in
             * (below): a link planted at the name is replaced, never written through. */
            if ((rc = od_cli_safe_open(&w->out_file, w->out_path)))
                goto done;
            w->out = w->out_file.f;
        }
        if (json && w->out == stdout) {
            rc = od_cli_usage_error("watch", "--json writes the summary to stdout: give the series a file with --out");
            goto done;
        }
    }
    if (prom) {
        char shown[200];
        lfd = listen_on(prom, shown, sizeof shown);
        if (lfd < 0) {
            rc = lfd == -2 ? OD_EXIT_USAGE : OD_EXIT_INTERNAL;
            goto done;
        }
        fprintf(stderr, "oomdoc: watch: serving Prometheus metrics on %s\n", shown);
    }
    for (size_t d = 0; d < n; d++) {
        if (ws[d]->out && !ws[d]->jsonl)
            fprintf(ws[d]->out, pid_opt ? "time_s,used_bytes,process_used_bytes\n" : "time_s,used_bytes\n");
        if (ws[d]->out_file.f) {
            if ((rc = od_cli_safe_publish(&ws[d]->out_file))) {
                ws[d]->out = NULL;
                goto done;
            }
        } else if (ws[d]->out) {
            fflush(ws[d]->out);
        }
    }

    install_signals();
    if (cmd) {
        pid_t c_pid = start_command(cmd);
        if (c_pid < 0) {
            rc = OD_EXIT_INTERNAL;
            goto done;
        }
        child_pid = c_pid;
        have_child = 1;
    }
    /* Started after the fork: the command's process never holds a copy of this thread's
     * locks. */
    if (lfd >= 0 && server_start(&sv, lfd, ws, n) != 0) {
        fprintf(stderr, "oomdoc: watch: --prometheus: cannot start the endpoint: %s\n", strerror(errno));
        rc = OD_EXIT_INTERNAL;
        goto done;
    }
    int tty = isatty(fileno(stderr));
    double t0 = mono_s(), next = t0, last_status = -1;
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
                any_lost |= w->lost;
                any_write_failed |= w->write_failed;
            }
            if (tty && (t - last_status >= 0.25 || last_status < 0)) {
                pthread_mutex_lock(&state_lock);
                status_line(ws, n);
                pthread_mutex_unlock(&state_lock);
                last_status = t;
            }
            /* The next tick: on the grid, but a late tick (suspended, slow NVML) is skipped
             * rather than caught up in a burst. */
            next += interval;
            if (next < now)
                next = now + interval;
        }
        if (have_child && child_done) {
            int st;
            pid_t r = waitpid(child_pid, &st, WNOHANG);
            if (r == child_pid) {
                cmd_rc = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 70;
                child_pid = 0;
                break;
            }
            child_done = 0;
        }
        if (stop_requested && !have_child)
            break;
        if (duration > 0 && mono_s() - t0 >= duration) {
            if (have_child) {
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
        if (!any_up && !have_child)
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
    server_stop(&sv);
    if (tty)
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
    if (json) {
        int jr = od_cli_print_json(summary_json(ws, n, dur, cmd, cmd_rc));
        if (jr)
            rc = jr;
    } else {
        for (size_t d = 0; d < n; d++)
            summary_text(ws[d], dur);
    }
    if (cmd)
        rc = cmd_rc;
    else if (any_lost)
        rc = OD_EXIT_NODEV;
    else if (any_write_failed)
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
    for (size_t d = 0; ws && d < n; d++) {
        watch_state *w = ws[d];
        if (!w)
            continue;
        if (w->out_file.f)
            od_cli_safe_abort(&w->out_file); /* never published: the old file stays */
        else if (w->out && w->out != stdout)
            fclose(w->out);
        od_watch_free(&w->wt);
        free(w);
    }
    free(ws);
    free(procs);
    od_nvml_close(nv);
    return rc;
}
