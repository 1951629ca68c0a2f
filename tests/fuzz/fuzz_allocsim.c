/* fuzz_allocsim.c - the allocator settings parser, the trace replay and the model's
 * private pools on arbitrary input.
 * Input: an allocator-conf line (up to the first newline), then 1 setting byte, then
 * 10-byte records (action, stream, size as 4 bytes scaled, address slot as 4 bytes):
 * garbage configurations must be refused cleanly and any trace, however absurd, must
 * replay without a crash, hang or sanitizer report. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/allocsim.h"
#include "model/replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size < 512 ? size : 512);
    size_t clen = nl ? (size_t)(nl - data) : (size < 512 ? size : 512);
    char conf[513];
    memcpy(conf, data, clen);
    conf[clen] = 0;
    od_replay_opts o = { 0 };
    od_allocsim_config_default(&o.cfg);
    od_error err;
    if (od_allocsim_config_parse(&o.cfg, conf, &err) != OD_OK) od_allocsim_config_default(&o.cfg);
    data += clen + (nl ? 1 : 0);
    size -= clen + (nl ? 1 : 0);
    if (size < 1) return 0;
    uint8_t knobs = data[0];
    data++;
    size--;
    /* a cap from 0 (none) to 2 GiB in 256 MiB steps */
    o.cfg.allowed_bytes = (uint64_t)(knobs & 7) << 28;
    o.cfg.device_total_bytes = 1ull << 33;
    o.device = 0;
    size_t n = size / 10;
    if (n > 4096) n = 4096;
    od_trace_entry *e = calloc(n ? n : 1, sizeof *e);
    if (!e) return 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = data + i * 10;
        uint32_t sz, slot;
        memcpy(&sz, p + 2, 4);
        memcpy(&slot, p + 6, 4);
        e[i].action = (uint8_t)(p[0] % (OD_ACT_OTHER + 1));
        e[i].stream = p[1] & 3;
        /* sizes from bytes to tens of GiB; addresses in a small set so frees hit */
        e[i].size = (knobs & 8) ? ((uint64_t)sz << (sz & 15)) : sz;
        e[i].addr = 0x7f0000000000ull - ((uint64_t)(slot % 64) << 21);
        e[i].device_free = (uint64_t)sz << 12;
    }
    od_replay_result r;
    od_trace_store *store = od_trace_store_of(e, n);
    if (store) {
        od_device_trace tr;
        od_trace_store_view(store, 0, n, 0, &tr);
        od_replay_trace(&tr, &o, &r, &err);
        od_trace_store_free(store);
    }
    /* the same records straight into the model, with private pools (graph captures):
     * requests to pool 0..3, some while a capture is underway, frees, releases of a pool,
     * empty_cache; a block's size never falls below its rounded request */
    od_allocsim *sim = NULL;
    uint64_t live[64] = { 0 };
    if (od_allocsim_create(&o.cfg, &sim, &err) == OD_OK) {
        for (size_t i = 0; i < n; i++) {
            uint64_t pool = e[i].stream, a = 0;
            size_t slot = (size_t)(e[i].addr >> 21) % 64;
            int oom;
            switch (e[i].action % 5) {
            case 0:
            case 1:
                if (od_allocsim_malloc(sim, e[i].size, e[i].stream, pool,
                                       e[i].action % 5 ? OD_SIM_CAPTURING : 0, &a, &oom) != OD_OK)
                    break;
                if (a && !live[slot]) live[slot] = a;
                if (a && od_allocsim_block_size(sim, a) < od_allocsim_round_size(&o.cfg, e[i].size))
                    abort();
                break;
            case 2:
                if (live[slot]) od_allocsim_free(sim, live[slot]);
                live[slot] = 0;
                break;
            case 3:
                od_allocsim_release_pool(sim, pool);
                break;
            default:
                od_allocsim_empty_cache(sim);
                break;
            }
        }
        od_allocsim_free_sim(sim);
    }
    free(e);
    return 0;
}
