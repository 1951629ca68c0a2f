/* cmd_plan.c - `oomdoc plan`: will it fit, the largest batch, and the cheapest changes
 * that make it fit. Argument parsing and formatting only; the model is lib/estimate. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "commands.h"
#include "model/plan.h"
#include "output.h"
#include "planflags.h"
#include "read/hfconfig.h"
#include "read/safetensors.h"

#include <dirent.h>
#include <sys/stat.h>

#define CMD "plan"
#define MAX_CONFIG_BYTES (16u << 20)

static const char USAGE[] =
    "usage: oomdoc plan (--config config.json | --layers L --hidden H [--params N] ...)\n"
    "                   [training or inference flags] [--gpu NAME | --memory SIZE]\n"
    "                   [--json] [--fail-if-not-fits]\n"
    "\n"
    "Estimate the peak GPU memory of a training step or a generate() call from a Hugging\n"
    "Face config.json, say whether it fits, find the largest batch that does, and rank the\n"
    "changes that make it fit, cheapest compute first.\n"
    "\n"
    "Model:\n"
    "  --model DIR|ORG/NAME   a checkpoint directory: config.json, and the safetensors\n"
    "                         headers (model.safetensors, or the index and its shards) for\n"
    "                         the exact parameter count and weight bytes (GPTQ/AWQ and\n"
    "                         bitsandbytes checkpoints load as stored); a Hugging Face cache\n"
    "                         folder models--ORG--NAME; or ORG/NAME found in the local cache\n"
    "                         ($HF_HOME/hub, else ~/.cache/huggingface/hub; never downloaded)\n"
    "  --config FILE          Hugging Face config.json (gpt2, llama, mistral, qwen2, qwen3,\n"
    "                         gemma, gemma2, gemma3_text, phi, phi3, falcon, gpt_neox, gptj,\n"
    "                         opt, bloom, mpt, starcoder2, olmo, olmo2, cohere, mixtral,\n"
    "                         qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3, dbrx, jamba\n"
    "                         (Mamba + attention), mamba (SSM state, no KV cache), encoders\n"
    "                         bert, roberta, deberta-v2, encoder-decoders t5, bart; any other\n"
    "                         with the generic fields, read as Llama)\n"
    "  --layers L --hidden H  a Llama-style model without a config; --params N (6.7e9, 7B)\n"
    "                         solves the MLP width to match N parameters\n"
    "  --params N --heads A --kv-heads G --intermediate I --vocab V  (optional)\n"
    "Training (--task train, the default):\n"
    "  --batch B              micro-batch per GPU (default 1)\n"
    "  --seq S                sequence length (default 1024)\n"
    "  --precision P          fp32, amp-bf16 (default), amp-fp16, bf16, mixed-fp16,\n"
    "                         mixed-bf16 (half weights, fp32 master weights in the optimizer)\n"
    "  --optimizer O          adamw (default), adamw-fused, sgd, sgd-nomom, adafactor, adam8bit,\n"
    "                         paged-adamw-8bit (the same states in unified memory)\n"
    "  --attention A          sdpa (default), eager, flash\n"
    "  --checkpointing C      none (default), full, selective\n"
    "  --grad-accum K         micro-batches per optimizer step (default 1)\n"
    "  --zero Z --dp N        ZeRO/FSDP stage 0-3 across N data-parallel GPUs\n"
    "  --tp N                 tensor parallel (Megatron): heads and MLP width split over N\n"
    "                         GPUs; norms, dropouts and the residual stream stay whole\n"
    "  --sp                   sequence parallel (with --tp): those split along the sequence\n"
    "                         too (Korthikanti et al. 2022: sbh/t(34 + 5as/h) a GPT layer)\n"
    "  --cp N                 context parallel (Megatron-Core): each GPU holds seq/N tokens'\n"
    "                         activations and K/V (flash attention passes the other chunks'\n"
    "                         K/V ring-wise); weights, gradients, optimizer state unsplit\n"
    "  --pp N                 pipeline stages, 1F1B: the first stage holds its L/N layers for\n"
    "                         min(N, --grad-accum) micro-batches in flight (L layers' worth)\n"
    "  --vpp V                interleaved 1F1B, V virtual stages per GPU: x (1 + (N-1)/(N V))\n"
    "                         in flight (Megatron-LM's interleaved schedule memory penalty)\n"
    "  --lora-rank R          LoRA on all linear layers instead of full fine-tuning\n"
    "  --lora-targets T       q,k,v,o,gate,up,down (any of them) or all-linear (default)\n"
    "  --base-weights W       the frozen LoRA base: nf4 (QLoRA, double quantization,\n"
    "                         ~0.52 B/param), int8, bf16 (default: the precision's dtype)\n"
    "  --freeze N             embeddings and the first N layers frozen (no gradients, no\n"
    "                         optimizer state, nothing saved for backward there)\n"
    "  --chunked-loss         loss computed in chunks (no full fp32 logits)\n"
    "  --offload              optimizer state and step on the CPU (= --offload-optimizer cpu)\n"
    "  --framework F          torch (default), deepspeed (model states as DeepSpeed's ZeRO\n"
    "                         stages lay them out, by its memory.rst; host RAM per node),\n"
    "                         fsdp (PyTorch FSDP: fp32 shards, 16-bit units gathered one at\n"
    "                         a time + the prefetched one), ddp (full replicas + gradient\n"
    "                         buckets holding a copy of every gradient)\n"
    "  --fsdp S               full (FULL_SHARD, default), grad-op (SHARD_GRAD_OP: gathered\n"
    "                         from forward through backward), hybrid (sharded within a node)\n"
    "  --gradient-as-bucket-view  DDP's gradients are views of its buckets (no copies)\n"
    "  --offload-optimizer D  cpu, none (default)\n"
    "  --offload-params D     cpu, none (default; ZeRO-3 under deepspeed)\n"
    "  --zero-init            ZeRO-3 with deepspeed.zero.Init (no full model per process)\n"
    "  --nodes N              the --dp GPUs are N nodes of dp/N each (default 1)\n"
    "Serving (--engine vllm): KV blocks left after the weights and vLLM's profiling forward:\n"
    "  --gpu-memory-utilization U  fraction of the GPU vLLM may take (default 0.9)\n"
    "  --max-model-len L      tokens a sequence may reach (default: the config's context)\n"
    "  --block-size B         tokens a KV block holds (default 16)\n"
    "  --max-num-seqs N       sequences a step may schedule (default 256)\n"
    "  --max-num-batched-tokens N  tokens of the profiling forward (default max(L, 8192))\n"
    "  (with --weights, --kv-dtype, --tp; --model for a quantized checkpoint)\n"
    "Inference (--task infer): peak during generate(), weights included:\n"
    "  --batch B --prompt P --new-tokens N\n"
    "  --weights W            bf16 (default), fp16, fp32, int8 (+ a scale per channel),\n"
    "                         int4 (scale per 64), gptq-int4 (group 128: qweight, qzeros,\n"
    "                         fp16 scales, g_idx), awq-int4 (the same, no g_idx), nf4 (absmax\n"
    "                         per 64), fp8 (per-tensor scale); only the block linears are\n"
    "                         quantized: embeddings, lm_head and norms stay 16-bit\n"
    "  --kv-cache K           dynamic (default: transformers' DynamicCache, what generate()\n"
    "                         uses), static, paged, none (use_cache off: every step re-runs\n"
    "                         the sequence); a sliding window caps what its layers keep\n"
    "  --kv-dtype D           bf16, fp16, fp32, fp8, int8 (default: the weights' dtype)\n"
    "  --paged-block N        paged KV cache with N-token blocks (implies --kv-cache paged)\n"
    "Target:\n"
    "  --gpu NAME             t4, v100-16, a10g, l4, rtx4090, rtx3090, v100-32, a100-40,\n"
    "                         l40s, a6000, mi250x, h100-sxm (default; alias h100-80),\n"
    "                         h100-pcie, a100-80, h100-nvl, h200, b200, mi300x, or the name\n"
    "                         nvidia-smi prints (\"NVIDIA A100-SXM4-80GB\"); Apple m1-16 ..\n"
    "                         m2-ultra-192 (number = RAM in GB)\n"
    "  --memory SIZE          any device: usable memory, e.g. 80GiB\n"
    "Output:\n"
    "  --json                 JSON (schema_version 1, sizes in bytes)\n"
    "  --fail-if-not-fits     exit 1 when the workload does not fit (for CI)\n"
    "  -h, --help             this help\n"
    "\n"
    "Example:\n"
    "  oomdoc plan --config examples/configs/llama-160m.json --batch 8 --seq 2048 \\\n"
    "              --precision amp-bf16 --optimizer adamw --gpu h200\n"
    "\n" OD_EXIT_CODES_HELP;

enum {
    O_CONFIG = 256, O_PARAMS, O_LAYERS, O_HIDDEN, O_HEADS, O_KVHEADS, O_INTER, O_VOCAB,
    O_TASK, O_ACCUM, O_ZERO, O_DP, O_TP,
    O_PP, O_LORA, O_CHUNKED, O_OFFLOAD, O_PROMPT, O_NEW, O_WEIGHTS, O_KVCACHE, O_KVDTYPE,
    O_PAGED, O_GPU, O_MEMORY, O_JSON, O_FAIL, O_FRAMEWORK, O_OFF_OPT, O_OFF_PARAMS, O_ZINIT,
    O_NODES, O_MODEL, O_LORA_TARGETS, O_BASE_WEIGHTS, O_FREEZE, O_FSDP, O_BUCKET_VIEW, O_SP,
    O_ENGINE, O_GMU, O_MAXLEN, O_BLOCK, O_MAXSEQS, O_MAXTOK, O_CP, O_VPP
};

static const struct option OPTS[] = {
    {"config", required_argument, 0, O_CONFIG}, {"params", required_argument, 0, O_PARAMS},
    {"layers", required_argument, 0, O_LAYERS}, {"hidden", required_argument, 0, O_HIDDEN},
    {"heads", required_argument, 0, O_HEADS}, {"kv-heads", required_argument, 0, O_KVHEADS},
    {"intermediate", required_argument, 0, O_INTER}, {"vocab", required_argument, 0, O_VOCAB},
    {"task", required_argument, 0, O_TASK}, OD_WORKLOAD_OPTIONS,
    {"grad-accum", required_argument, 0, O_ACCUM}, {"zero", required_argument, 0, O_ZERO},
    {"dp", required_argument, 0, O_DP}, {"tp", required_argument, 0, O_TP},
    {"pp", required_argument, 0, O_PP}, {"lora-rank", required_argument, 0, O_LORA},
    {"cp", required_argument, 0, O_CP}, {"vpp", required_argument, 0, O_VPP},
    {"chunked-loss", no_argument, 0, O_CHUNKED}, {"offload", no_argument, 0, O_OFFLOAD},
    {"prompt", required_argument, 0, O_PROMPT}, {"new-tokens", required_argument, 0, O_NEW},
    {"weights", required_argument, 0, O_WEIGHTS}, {"kv-cache", required_argument, 0, O_KVCACHE},
    {"kv-dtype", required_argument, 0, O_KVDTYPE},
    {"paged-block", required_argument, 0, O_PAGED}, {"gpu", required_argument, 0, O_GPU},
    {"memory", required_argument, 0, O_MEMORY}, {"json", no_argument, 0, O_JSON},
    {"fail-if-not-fits", no_argument, 0, O_FAIL}, {"help", no_argument, 0, 'h'},
    {"framework", required_argument, 0, O_FRAMEWORK},
    {"offload-optimizer", required_argument, 0, O_OFF_OPT},
    {"offload-params", required_argument, 0, O_OFF_PARAMS}, {"zero-init", no_argument, 0, O_ZINIT},
    {"nodes", required_argument, 0, O_NODES}, {"model", required_argument, 0, O_MODEL},
    {"lora-targets", required_argument, 0, O_LORA_TARGETS},
    {"base-weights", required_argument, 0, O_BASE_WEIGHTS},
    {"freeze", required_argument, 0, O_FREEZE}, {"fsdp", required_argument, 0, O_FSDP},
    {"gradient-as-bucket-view", no_argument, 0, O_BUCKET_VIEW}, {"sp", no_argument, 0, O_SP},
    {"engine", required_argument, 0, O_ENGINE},
    {"gpu-memory-utilization", required_argument, 0, O_GMU},
    {"max-model-len", required_argument, 0, O_MAXLEN}, {"block-size", required_argument, 0, O_BLOCK},
    {"max-num-seqs", required_argument, 0, O_MAXSEQS},
    {"max-num-batched-tokens", required_argument, 0, O_MAXTOK},
    {0, 0, 0, 0}};

/* Index of text in the NULL-terminated names, or -1. */
static int pick(const char *text, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(text, names[i]))
            return i;
    return -1;
}

static int choice(const char *opt, const char *text, const char *const *names, int *out)
{
    int i = pick(text, names);
    if (i < 0) {
        char list[160] = "";
        for (int j = 0; names[j]; j++) {
            strncat(list, j ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, names[j], sizeof list - strlen(list) - 1);
        }
        return od_cli_usage_error(CMD, "%s: '%s' is not one of %s", opt, text, list);
    }
    *out = i;
    return 0;
}

static int read_config(const char *path, od_model *m)
{
    int rc;
    FILE *f = od_cli_open(path, &rc);
    if (!f)
        return rc;
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            if (cap >= MAX_CONFIG_BYTES) {
                free(buf);
                od_cli_close(f);
                od_error e;
                od_fail(&e, OD_ERR_LIMIT, "a config.json is not larger than 16 MiB");
                return od_cli_report_error(path, &e);
            }
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    od_cli_close(f);
    od_error err;
    if (!buf) {
        od_fail(&err, OD_ERR_NOMEM, "out of memory reading the config");
        return od_cli_report_error(path, &err);
    }
    od_status st = od_hfconfig_parse(buf, len, m, &err);
    free(buf);
    if (st != OD_OK)
        return od_cli_report_error(path, &err);
    if (m->generic)
        fprintf(stderr, "oomdoc: plan: warning: %s: model_type \"%s\" is not one oomdoc knows; "
                "read as a Llama-style block from its generic fields (gated MLP 3*h*I, %s "
                "embeddings)\n", path, m->model_type, m->tied_embeddings ? "tied" : "untied");
    return 0;
}


static int too_long(const char *path)
{
    od_error err;
    od_fail(&err, OD_ERR_IO, "path too long");
    return od_cli_report_error(path, &err);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* A cache folder models--ORG--NAME: the snapshot refs/main names, else the last one (by
 * name) that has a config.json. 0 and dir filled, or an exit code. */
static int pick_snapshot(const char *repo, char *dir, size_t n)
{
    char p[4096], ref[128] = "";
    snprintf(p, sizeof p, "%s/refs/main", repo);
    FILE *f = fopen(p, "r");
    if (f) {
        if (!fgets(ref, sizeof ref, f))
            ref[0] = 0;
        fclose(f);
        ref[strcspn(ref, " \r\n")] = 0;
        if (ref[0] && !strchr(ref, '/')) {
            snprintf(dir, n, "%s/snapshots/%s", repo, ref);
            snprintf(p, sizeof p, "%s/config.json", dir);
            if (is_file(p))
                return 0;
        }
    }
    snprintf(p, sizeof p, "%s/snapshots", repo);
    DIR *d = opendir(p);
    char best[256] = "";
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char c[4096];
        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof best)
            continue;
        if ((size_t)snprintf(c, sizeof c, "%s/%s/config.json", p, e->d_name) >= sizeof c)
            continue;
        if (is_file(c) && strcmp(e->d_name, best) > 0)
            snprintf(best, sizeof best, "%s", e->d_name);
    }
    if (d)
        closedir(d);
    if (!best[0]) {
        od_error err;
        od_fail(&err, OD_ERR_IO, "a Hugging Face cache folder without a snapshot holding config.json");
        return od_cli_report_error(repo, &err);
    }
    if ((size_t)snprintf(dir, n, "%s/%s", p, best) >= n)
        return too_long(repo);
    return 0;
}

/* --model: a directory with config.json, a cache folder, or ORG/NAME in the local cache
 * (the CLI reads HF_HOME and HOME; the library never does). */
static int resolve_model(const char *arg, char *dir, size_t n)
{
    char p[4096];
    if (is_dir(arg)) {
        snprintf(p, sizeof p, "%s/config.json", arg);
        if (is_file(p)) {
            snprintf(dir, n, "%s", arg);
            return 0;
        }
        snprintf(p, sizeof p, "%s/snapshots", arg);
        if (is_dir(p))
            return pick_snapshot(arg, dir, n);
        od_error err;
        od_fail(&err, OD_ERR_IO, "no config.json in this directory (nor a Hugging Face cache folder)");
        return od_cli_report_error(arg, &err);
    }
    const char *slash = strchr(arg, '/');
    if (!slash || slash == arg || !slash[1] || strchr(slash + 1, '/') || arg[0] == '.' ||
        strstr(arg, "--")) {
        od_error err;
        od_fail(&err, OD_ERR_IO, "not a directory, nor a model id ORG/NAME");
        return od_cli_report_error(arg, &err);
    }
    const char *home = getenv("HF_HOME"), *cache = "~/.cache/huggingface/hub";
    char hub[2048];
    if (home && home[0]) {
        snprintf(hub, sizeof hub, "%s/hub", home);
        cache = "$HF_HOME/hub";
    } else if ((home = getenv("HOME")) && home[0]) {
        snprintf(hub, sizeof hub, "%s/.cache/huggingface/hub", home);
    } else {
        return od_cli_usage_error(CMD, "--model %s: neither HF_HOME nor HOME is set to find the cache", arg);
    }
    snprintf(p, sizeof p, "%s/models--%.*s--%s", hub, (int)(slash - arg), arg, slash + 1);
    if (!is_dir(p)) {
        fprintf(stderr, "oomdoc: plan: --model %s: not in the local Hugging Face cache (%s); "
                "oomdoc never downloads: fetch it first (huggingface-cli download %s "
                "config.json model.safetensors.index.json) or give --config\n", arg, cache, arg);
        return OD_EXIT_INPUT;
    }
    return pick_snapshot(p, dir, n);
}

/* Add one .safetensors file's header to *t: 0, or an exit code after the error line. */
static int read_safetensors(const char *path, unsigned bits, od_safetensors_totals *t)
{
    int rc;
    FILE *f = od_cli_open(path, &rc);
    if (!f)
        return rc;
    od_error err;
    uint64_t size = od_cli_file_size(f), n = 0;
    uint8_t prefix[8] = {0};
    size_t got = fread(prefix, 1, 8, f);
    if (got < 8)
        size = got;
    od_status st = od_safetensors_header_length(prefix, size, &n, &err);
    char *hdr = NULL;
    if (st == OD_OK) {
        hdr = malloc(n ? n : 1);
        if (!hdr)
            st = od_fail(&err, OD_ERR_NOMEM, "out of memory reading the header");
        else if (fread(hdr, 1, n, f) != n)
            st = od_fail_at(&err, OD_ERR_IO, 8, "cannot read the %llu-byte header",
                            (unsigned long long)n);
        else
            st = od_safetensors_add_header(hdr, n, size - 8 - n, bits, t, &err);
    }
    free(hdr);
    od_cli_close(f);
    return st == OD_OK ? 0 : od_cli_report_error(path, &err);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The checkpoint in dir: the index's shards (each once, sorted), else model.safetensors;
 * nothing when neither is there (config only). */
static int read_checkpoint(const char *dir, unsigned bits, od_safetensors_totals *t)
{
    char p[4096];
    memset(t, 0, sizeof *t);
    if ((size_t)snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir) >= sizeof p)
        return too_long(dir);
    if (is_file(p)) {
        json_error_t je;
        json_t *idx = json_load_file(p, 0, &je);
        json_t *wm = idx ? json_object_get(idx, "weight_map") : NULL;
        if (!json_is_object(wm)) {
            od_error err;
            if (idx)
                od_fail(&err, OD_ERR_FORMAT, "no \"weight_map\" object (tensor name -> shard file)");
            else
                od_fail_at(&err, OD_ERR_FORMAT, (uint64_t)(je.position > 0 ? je.position - 1 : 0),
                           "not JSON: %s", je.text);
            json_decref(idx);
            return od_cli_report_error(p, &err);
        }
        size_t nn = 0, cap = json_object_size(wm);
        const char **files = calloc(cap ? cap : 1, sizeof *files);
        const char *k;
        json_t *v;
        int rc = 0;
        json_object_foreach(wm, k, v) {
            const char *fn = json_string_value(v);
            if (!fn || strchr(fn, '/') || fn[0] == '.') {
                od_error err;
                od_fail(&err, OD_ERR_FORMAT, "weight_map \"%.80s\": not a shard file name in this directory", k);
                rc = od_cli_report_error(p, &err);
                break;
            }
            if (files)
                files[nn++] = fn;
        }
        if (files && !rc) {
            qsort(files, nn, sizeof *files, cmp_str);
            for (size_t i = 0; i < nn && !rc; i++) {
                if (i && !strcmp(files[i], files[i - 1]))
                    continue;
                if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, files[i]) >= sizeof p) {
                    rc = too_long(dir);
                    break;
                }
                rc = read_safetensors(p, bits, t);
            }
        }
        free(files);
        json_decref(idx);
        return rc;
    }
    if ((size_t)snprintf(p, sizeof p, "%s/model.safetensors", dir) >= sizeof p)
        return too_long(dir);
    return is_file(p) ? read_safetensors(p, bits, t) : 0;
}

static const char *iec(uint64_t b, char *buf) { return od_format_iec(b, buf, 32); }

static json_t *breakdown_json(const od_breakdown *b)
{
    return json_pack("{sI sI sI sI sI sI sI sI}", "parameters", (json_int_t)b->parameters,
                     "gradients", (json_int_t)b->gradients, "optimizer_states",
                     (json_int_t)b->optimizer_states, "activations", (json_int_t)b->activations,
                     "logits_and_loss", (json_int_t)b->logits_and_loss, "kv_cache",
                     (json_int_t)b->kv_cache, "temporaries", (json_int_t)b->temporaries, "workspace",
                     (json_int_t)b->workspace);
}

static json_t *workload_json(const od_workload *w)
{
    if (w->task == OD_TASK_INFER)
        return json_pack("{sI sI sI ss ss si sI sI sI}", "batch", (json_int_t)w->batch, "prompt",
                         (json_int_t)w->prompt, "new_tokens", (json_int_t)w->new_tokens,
                         "weights", od_weights_name(w->weights), "kv_cache",
                         od_kv_cache_name(w->kv_cache), "kv_bytes_per_element", w->kv_bytes,
                         "paged_block", (json_int_t)w->paged_block, "tp", (json_int_t)w->tp,
                         "workspace_bytes", (json_int_t)w->workspace_bytes);
    json_t *j = json_pack("{sI sI ss ss ss ss sI si sI sI sI sI sb sb sI}", "batch",
                          (json_int_t)w->batch, "seq", (json_int_t)w->seq, "precision",
                          od_precision_name(w->precision), "optimizer",
                          od_optimizer_name(w->optimizer), "attention",
                          od_attention_name(w->attention), "checkpointing", od_ckpt_name(w->ckpt),
                          "grad_accum", (json_int_t)w->grad_accum, "zero", w->zero, "dp",
                          (json_int_t)w->dp, "tp", (json_int_t)w->tp, "pp", (json_int_t)w->pp,
                          "lora_rank", (json_int_t)w->lora_rank, "chunked_loss",
                          w->chunked_loss, "offload", w->offload_optimizer, "workspace_bytes",
                          (json_int_t)w->workspace_bytes);
    if (w->lora_rank) {
        char t[64];
        json_object_set_new(j, "lora_targets",
                            json_string(od_lora_targets_text(w->lora_targets, t, sizeof t)));
        json_object_set_new(j, "base_weights", json_string(od_base_weights_name(w->base_weights)));
    }
    if (w->freeze_layers)
        json_object_set_new(j, "freeze_layers", json_integer((json_int_t)w->freeze_layers));
    if (w->sp)
        json_object_set_new(j, "sp", json_true());
    if (w->cp > 1)
        json_object_set_new(j, "cp", json_integer((json_int_t)w->cp));
    if (w->vpp > 1)
        json_object_set_new(j, "vpp", json_integer((json_int_t)w->vpp));
    json_object_set_new(j, "framework", json_string(w->deepspeed ? "deepspeed" : w->fsdp ? "fsdp"
                                                    : w->ddp ? "ddp" : "torch"));
    if (w->fsdp)
        json_object_set_new(j, "fsdp", json_string(od_fsdp_name(w->fsdp)));
    if (w->ddp)
        json_object_set_new(j, "gradient_as_bucket_view", json_boolean(w->ddp_bucket_view));
    if (w->deepspeed)
        json_object_set_new(j, "deepspeed",
                            json_pack("{sb sb sI}", "offload_params", w->offload_params,
                                      "zero_init", w->zero_init, "nodes", (json_int_t)w->nodes));
    return j;
}

static int print_json(const od_model *m, const od_workload *w, const od_gpu *gpu,
                      const od_plan *p, const od_safetensors_totals *ck, uint64_t config_params)
{
    const od_estimate *e = &p->estimate;
    json_t *doc = json_object();
    json_object_set_new(doc, "schema_version", json_integer(1));
    json_object_set_new(doc, "task", json_string(w->task == OD_TASK_TRAIN ? "train" : "infer"));
    json_object_set_new(doc, "model",
                        json_pack("{ss sI sI sI sI sI sI sI sI sI}", "model_type", m->model_type,
                                  "layers", (json_int_t)m->layers, "hidden",
                                  (json_int_t)m->hidden, "heads", (json_int_t)m->heads,
                                  "kv_heads", (json_int_t)m->kv_heads, "head_dim",
                                  (json_int_t)m->head_dim, "intermediate",
                                  (json_int_t)m->intermediate, "vocab", (json_int_t)m->vocab,
                                  "experts", (json_int_t)m->experts, "experts_per_token",
                                  (json_int_t)m->experts_per_token));
    json_object_set_new(doc, "workload", workload_json(w));
    json_object_set_new(doc, "params", json_integer((json_int_t)e->params));
    if (ck)
        json_object_set_new(doc, "checkpoint",
                            json_pack("{sI sI sI sI sI sI ss* sI}", "safetensors_files",
                                      (json_int_t)ck->files, "tensors", (json_int_t)ck->tensors,
                                      "params", (json_int_t)ck->params, "weight_bytes",
                                      (json_int_t)ck->weight_bytes, "quantization_metadata_bytes",
                                      (json_int_t)ck->quant_meta_bytes, "packed_params",
                                      (json_int_t)ck->packed_params, "quantization",
                                      ck->quant[0] ? ck->quant : NULL, "config_params",
                                      (json_int_t)config_params));
    json_object_set_new(doc, "model_states_bytes", json_integer((json_int_t)e->model_states_bytes));
    json_object_set_new(doc, "kv_cache_bytes_per_token",
                        json_integer((json_int_t)e->kv_cache_bytes_per_token));
    json_object_set_new(doc, "host_bytes", json_integer((json_int_t)e->host_bytes));
    json_object_set_new(doc, "attention_kernel", json_string(e->attention_kernel));
    json_object_set_new(doc, "peak_phase", json_string(e->peak_phase));
    if (e->ssm_state_bytes_per_sequence)
        json_object_set_new(doc, "ssm_state_bytes_per_sequence",
                            json_integer((json_int_t)e->ssm_state_bytes_per_sequence));
    if (e->moe_decode_copy_bytes_per_token)
        json_object_set_new(doc, "moe_decode_copy_bytes_per_token",
                            json_integer((json_int_t)e->moe_decode_copy_bytes_per_token));
    if (w->task == OD_TASK_TRAIN)
        json_object_set_new(doc, "per_layer_activation_bytes",
                            e->per_layer_activation_bytes
                                ? json_integer((json_int_t)e->per_layer_activation_bytes)
                                : json_null());
    json_object_set_new(doc, "breakdown_bytes", breakdown_json(&e->at_peak));
    json_object_set_new(doc, "peak_allocated_bytes", json_integer((json_int_t)e->peak_allocated_bytes));
    json_object_set_new(doc, "phases",
                        json_pack("{sI sI sI}", "forward_peak_bytes",
                                  (json_int_t)e->forward_peak_bytes, "backward_peak_bytes",
                                  (json_int_t)e->backward_peak_bytes, "optimizer_peak_bytes",
                                  (json_int_t)e->optimizer_peak_bytes));
    if (w->task == OD_TASK_TRAIN)
        json_object_set_new(doc, "first_step_peak_bytes",
                            json_integer((json_int_t)e->first_step_peak_bytes));
    json_object_set_new(doc, "peak_reserved_bytes", json_integer((json_int_t)e->peak_reserved_bytes));
    json_object_set_new(doc, "cuda_context_bytes", json_integer((json_int_t)p->cuda_context_bytes));
    json_object_set_new(doc, "device_memory_bytes", json_integer((json_int_t)p->device_memory_bytes));
    json_t *t = json_pack("{ss ss sI sb}", "name", gpu->name, "description", gpu->description,
                          "memory_bytes", (json_int_t)gpu->memory_bytes, "unified_memory",
                          gpu->unified);
    if (gpu->unified) {
        json_object_set_new(t, "ram_bytes", json_integer((json_int_t)gpu->ram_bytes));
        json_object_set_new(t, "note", json_string(od_gpu_unified_note()));
    }
    json_object_set_new(doc, "target", t);
    json_t *as = json_array();
    for (size_t i = 0; i < e->n_assumptions; i++)
        json_array_append_new(as, json_pack("{ss ss}", "assumption", e->assumptions[i].text,
                                            "source", e->assumptions[i].source));
    json_object_set_new(doc, "assumptions", as);
    json_object_set_new(doc, "fits", json_boolean(p->fits));
    json_object_set_new(doc, "max_batch", json_integer((json_int_t)p->max_batch));
    json_t *ms = json_array();
    for (size_t i = 0; i < p->n_mitigations; i++) {
        const od_mitigation *x = &p->mitigations[i];
        json_array_append_new(
            ms, json_pack("{ss ss ss sf ss ss ss ss sI sI sb}", "key", x->key, "change", x->title,
                          "flags", x->flags, "compute_overhead_pct", x->overhead_pct,
                          "compute_overhead", x->overhead, "accuracy_risk", x->accuracy_risk,
                          "needs", x->needs, "communication", x->communication,
                          "peak_allocated_bytes", (json_int_t)x->peak_allocated_bytes,
                          "device_memory_bytes", (json_int_t)x->device_memory_bytes, "fits",
                          x->fits));
    }
    json_object_set_new(doc, "mitigations", ms);
    const od_mitigation *cl = &p->closest;
    json_object_set_new(doc, "does_not_fit_even_with",
                        p->has_closest
                            ? json_pack("{ss ss ss sI sI}", "key", cl->key, "change", cl->title,
                                        "flags", cl->flags, "peak_allocated_bytes",
                                        (json_int_t)cl->peak_allocated_bytes, "device_memory_bytes",
                                        (json_int_t)cl->device_memory_bytes)
                            : json_null());
    return od_cli_print_json(doc);
}

static void print_text(const od_model *m, const od_workload *w, const od_gpu *gpu,
                       const od_plan *p, const od_safetensors_totals *ck, uint64_t config_params)
{
    const od_estimate *e = &p->estimate;
    const od_breakdown *b = &e->at_peak;
    char x[32], y[32], z[32], f[32];
    od_cli_color_init();
    printf("%smodel%s %s: %llu parameters, %llu layers, hidden %llu, ", od_c_bold, od_c_reset,
           m->model_type, (unsigned long long)e->params, (unsigned long long)m->layers,
           (unsigned long long)m->hidden);
    if (m->ssm_layers < m->layers)
        printf("%llu/%llu heads, ", (unsigned long long)m->heads, (unsigned long long)m->kv_heads);
    if (m->ssm_layers)
        printf("%llu Mamba layers (state %llu, inner %llu), ", (unsigned long long)m->ssm_layers,
               (unsigned long long)m->ssm_state, (unsigned long long)m->ssm_inner);
    printf("vocab %llu", (unsigned long long)m->vocab);
    if (m->experts)
        printf(", %llu experts (top %llu)", (unsigned long long)m->experts,
               (unsigned long long)m->experts_per_token);
    printf("\n");
    if (ck && ck->files) {
        printf("checkpoint: %llu tensors in %llu safetensors file%s, %s of weights",
               (unsigned long long)ck->tensors, (unsigned long long)ck->files,
               ck->files == 1 ? "" : "s", iec(ck->weight_bytes, x));
        if (ck->quant[0])
            printf(" (%s: %llu parameters packed, %s of scales and zeros)", ck->quant,
                   (unsigned long long)ck->packed_params, iec(ck->quant_meta_bytes, y));
        if (ck->params == config_params)
            printf("; the config's layout counts the same\n");
        else
            printf("; the config's layout counts %llu parameters (%+.2f%%)\n",
                   (unsigned long long)config_params,
                   100.0 * ((double)config_params - (double)ck->params) / (double)ck->params);
    } else if (ck) {
        printf("checkpoint: no safetensors files beside config.json: parameters counted from it\n");
    }
    if (w->task == OD_TASK_TRAIN)
        printf("%straining%s batch %llu x seq %llu, %s, %s, attention %s (%s kernel), "
               "checkpointing %s, grad-accum %llu\n", od_c_bold, od_c_reset,
               (unsigned long long)w->batch, (unsigned long long)w->seq,
               od_precision_name(w->precision), od_optimizer_name(w->optimizer),
               strcmp(e->attention_kernel, "none") ? od_attention_name(w->attention) : "none",
               strcmp(e->attention_kernel, "none") ? e->attention_kernel : "Mamba mixers, no",
               od_ckpt_name(w->ckpt),
               (unsigned long long)w->grad_accum);
    if (w->task == OD_TASK_TRAIN && (w->lora_rank || w->freeze_layers)) {
        char t[64];
        if (w->lora_rank)
            printf("LoRA rank %llu on %s, frozen base %s", (unsigned long long)w->lora_rank,
                   od_lora_targets_text(w->lora_targets, t, sizeof t),
                   w->base_weights ? od_base_weights_name(w->base_weights)
                                   : od_precision_name(w->precision));
        if (w->freeze_layers)
            printf("%sembeddings and the first %llu layers frozen", w->lora_rank ? "; " : "",
                   (unsigned long long)w->freeze_layers);
        printf("\n");
    }
    if (w->task == OD_TASK_TRAIN && w->fsdp)
        printf("FSDP %s over %llu GPUs%s\n",
               w->fsdp == OD_FSDP_FULL ? "FULL_SHARD" : w->fsdp == OD_FSDP_GRAD_OP ? "SHARD_GRAD_OP"
                                                                            : "HYBRID_SHARD",
               (unsigned long long)w->dp, w->fsdp == OD_FSDP_HYBRID ? " (sharded within each node)" : "");
    if (w->task == OD_TASK_TRAIN && w->ddp)
        printf("DDP over %llu GPUs, 25 MiB gradient buckets%s\n", (unsigned long long)w->dp,
               w->ddp_bucket_view ? " (gradients are views of them)" : " (a copy of every gradient)");
    if (w->task == OD_TASK_INFER)
        printf("%sgenerate%s batch %llu, prompt %llu + %llu new tokens, %s weights, KV cache %s\n",
               od_c_bold, od_c_reset, (unsigned long long)w->batch,
               (unsigned long long)w->prompt, (unsigned long long)w->new_tokens,
               m->ckpt_quantized ? "the checkpoint's quantized" : od_weights_name(w->weights),
               od_kv_cache_name(w->kv_cache));
    printf("\npeak allocated %s (in %s)\n", iec(e->peak_allocated_bytes, x), e->peak_phase);
    struct { const char *k; uint64_t v; } rows[] = {
        {"parameters", b->parameters}, {"gradients", b->gradients},
        {"optimizer states", b->optimizer_states}, {"activations", b->activations},
        {"logits and loss", b->logits_and_loss}, {"KV cache", b->kv_cache},
        {"temporaries", b->temporaries}, {"workspace", b->workspace}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].v)
            printf("  %-18s %12s\n", rows[i].k, iec(rows[i].v, x));
    if (w->task == OD_TASK_TRAIN && (w->deepspeed || e->host_bytes))
        printf("model states %s per GPU; host RAM %s per node%s\n", iec(e->model_states_bytes, x),
               iec(e->host_bytes, y), w->deepspeed ? " (DeepSpeed's estimate, 1.5x buffer)" : "");
    if (w->task == OD_TASK_INFER && e->quantized_params)
        printf("quantized: %llu block-linear parameters as %s; embeddings, lm_head and norms stay "
               "16-bit\n", (unsigned long long)e->quantized_params, od_weights_name(w->weights));
    if (w->task == OD_TASK_INFER && e->ssm_state_bytes_per_sequence && w->kv_cache != OD_KV_NONE)
        printf("Mamba state: %s a sequence (conv and SSM states of %llu layers, fixed), in the KV "
               "cache row\n", iec(e->ssm_state_bytes_per_sequence, x),
               (unsigned long long)m->ssm_layers);
    if (w->task == OD_TASK_INFER && e->moe_decode_copy_bytes_per_token)
        printf("MoE decode: transformers' batched_mm experts copy each routed expert's weights per "
               "token: %s a token in one MoE layer (from its source; not checked against a measured "
               "run)\n", iec(e->moe_decode_copy_bytes_per_token, x));
    if (w->task == OD_TASK_TRAIN && e->per_layer_activation_bytes)
        printf("per layer: %s saved for backward a micro-batch%s; this GPU holds %.4g of them "
               "(= %s)\n", iec(e->per_layer_activation_bytes, x),
               e->paper_layout ? " (Korthikanti et al. 2022's equations)" : "", e->activation_layers,
               iec((uint64_t)((double)e->per_layer_activation_bytes * e->activation_layers + 0.5), y));
    if (w->task == OD_TASK_TRAIN)
        printf("phases: forward %s, backward %s, optimizer %s; first step %s\n",
               iec(e->forward_peak_bytes, x), iec(e->backward_peak_bytes, y),
               iec(e->optimizer_peak_bytes, z), iec(e->first_step_peak_bytes, f)); /* one buffer each: the
                                                                                         order arguments are
                                                                                         evaluated in is unspecified */
    printf("reserved %s + CUDA context %s = device memory %s\n",
           iec(e->peak_reserved_bytes, x), iec(p->cuda_context_bytes, y),
           iec(p->device_memory_bytes, z));
    printf("target %s (%s): %s usable", gpu->name, gpu->description, iec(gpu->memory_bytes, x));
    if (gpu->unified)
        printf(" of %s RAM\n  %s", iec(gpu->ram_bytes, y), od_gpu_unified_note());
    int wants_bf16 = w->task == OD_TASK_TRAIN
                         ? w->precision == OD_PREC_AMP_BF16 || w->precision == OD_PREC_BF16 ||
                               w->precision == OD_PREC_MIXED_BF16
                         : w->weights == OD_W_BF16;
    if (wants_bf16 && !gpu->bf16 && !gpu->unified)
        printf("\nnote: the %s has no bf16 tensor cores (before Ampere): use fp16 (amp-fp16,\n"
               "      mixed-fp16, --weights fp16); the memory is the same", gpu->name);
    printf("\n%s%s%s; largest batch that fits: %llu\n", p->fits ? od_c_green : od_c_red,
           p->fits ? "fits" : "does NOT fit", od_c_reset, (unsigned long long)p->max_batch);
    if (w->task == OD_TASK_INFER && w->kv_cache == OD_KV_NONE)
        printf("note: no KV cache (generate with use_cache off re-runs the sequence each step);\n"
               "      drop --kv-cache none for transformers' default dynamic cache\n");
    if (p->n_mitigations)
        printf("\n%s, cheapest compute first:\n",
               p->fits ? "changes that lower the peak" : "changes that make it fit");
    for (size_t i = 0; i < p->n_mitigations; i++) {
        const od_mitigation *mm = &p->mitigations[i];
        printf("  %2zu. %s%s%s\n      peak %s, device %s: %s%s%s\n      compute: %s; accuracy "
               "risk: %s", i + 1, od_c_bold, mm->title, od_c_reset,
               iec(mm->peak_allocated_bytes, x), iec(mm->device_memory_bytes, y),
               mm->fits ? od_c_green : od_c_yellow, mm->fits ? "fits" : "does not fit",
               od_c_reset, mm->overhead, mm->accuracy_risk);
        if (mm->needs[0])
            printf("; needs %s", mm->needs);
        if (mm->communication[0])
            printf("\n      communication: %s", mm->communication);
        printf("\n");
    }
    if (p->has_closest) {
        const char *t = p->closest.title;
        int together = !strncmp(t, "together: ", 10);
        printf("\n%sdoes not fit even with%s %s%s: peak %s, device %s\n", od_c_red, od_c_reset,
               together ? "all that helps, together: " : "", together ? t + 10 : t,
               iec(p->closest.peak_allocated_bytes, x), iec(p->closest.device_memory_bytes, y));
    }
}


/* --engine vllm: the budget, what comes off it, and the KV blocks left. */
static void print_vllm_text(const od_model *m, const od_workload *w, const od_gpu *gpu,
                            const od_vllm_config *c, const od_vllm_plan *v)
{
    char x[32], y[32], z[32];
    od_cli_color_init();
    printf("%smodel%s %s: %llu layers, hidden %llu, %llu/%llu heads, vocab %llu; %s weights",
           od_c_bold, od_c_reset, m->model_type, (unsigned long long)m->layers,
           (unsigned long long)m->hidden, (unsigned long long)m->heads,
           (unsigned long long)m->kv_heads, (unsigned long long)m->vocab,
           m->ckpt_quantized ? "the checkpoint's quantized" : od_weights_name(w->weights));
    if (w->tp > 1)
        printf(", tensor parallel %llu", (unsigned long long)w->tp);
    printf("\n%svLLM%s on %s (%s): gpu_memory_utilization %.2f x %s = %s\n", od_c_bold,
           od_c_reset, gpu->name, gpu->description, c->gpu_memory_utilization,
           iec(gpu->memory_bytes, x), iec(v->budget_bytes, y));
    uint64_t T = c->max_num_batched_tokens ? c->max_num_batched_tokens
                 : c->max_model_len > 8192 ? c->max_model_len : 8192;
    printf("  weights              %12s", iec(v->weights_bytes, x));
    if (v->quantized_params)
        printf("  (%s on %llu block-linear parameters; embeddings, lm_head, norms 16-bit)",
               od_weights_name(w->weights), (unsigned long long)v->quantized_params);
    printf("\n");
    printf("  activation peak      %12s  (profiling forward of %llu tokens)\n",
           iec(v->activation_bytes, x), (unsigned long long)T);
    printf("  outside PyTorch      %12s  (CUDA context)\n", iec(v->non_torch_bytes, x));
    printf("  KV cache             %12s  = %llu blocks of %llu tokens, %s each\n",
           iec(v->kv_cache_bytes, x), (unsigned long long)v->num_blocks,
           (unsigned long long)c->block_size, iec(v->block_bytes, y));
    printf("max model len %llu: %llu blocks a sequence; %s%llu sequences at once%s "
           "(maximum concurrency %.2fx)\n", (unsigned long long)c->max_model_len,
           (unsigned long long)v->blocks_per_seq, v->fits ? od_c_green : od_c_red,
           (unsigned long long)v->max_concurrent_seqs, od_c_reset, v->max_concurrency);
    if (!v->fits)
        printf("%sdoes NOT fit%s: one sequence of %llu tokens needs %s of KV cache; lower "
               "--max-model-len, raise --gpu-memory-utilization, quantize the KV cache "
               "(--kv-dtype fp8) or add --tp\n", od_c_red, od_c_reset,
               (unsigned long long)c->max_model_len, iec(v->blocks_per_seq * v->block_bytes, z));
}

static int print_vllm_json(const od_model *m, const od_workload *w, const od_gpu *gpu,
                           const od_vllm_config *c, const od_vllm_plan *v)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "schema_version", json_integer(1));
    json_object_set_new(doc, "task", json_string("serve"));
    json_object_set_new(doc, "engine", json_string("vllm"));
    json_object_set_new(doc, "model",
                        json_pack("{ss sI sI sI sI sI}", "model_type", m->model_type, "layers",
                                  (json_int_t)m->layers, "hidden", (json_int_t)m->hidden,
                                  "heads", (json_int_t)m->heads, "kv_heads",
                                  (json_int_t)m->kv_heads, "vocab", (json_int_t)m->vocab));
    json_object_set_new(doc, "config",
                        json_pack("{sf sI sI sI sI ss si sI}", "gpu_memory_utilization",
                                  c->gpu_memory_utilization, "max_model_len",
                                  (json_int_t)c->max_model_len, "block_size",
                                  (json_int_t)c->block_size, "max_num_seqs",
                                  (json_int_t)c->max_num_seqs, "max_num_batched_tokens",
                                  (json_int_t)c->max_num_batched_tokens, "weights",
                                  m->ckpt_quantized ? "checkpoint" : od_weights_name(w->weights),
                                  "kv_bytes_per_element", w->kv_bytes, "tp", (json_int_t)w->tp));
    json_object_set_new(doc, "target",
                        json_pack("{ss sI}", "name", gpu->name, "memory_bytes",
                                  (json_int_t)gpu->memory_bytes));
    json_object_set_new(doc, "budget_bytes", json_integer((json_int_t)v->budget_bytes));
    json_object_set_new(doc, "weights_bytes", json_integer((json_int_t)v->weights_bytes));
    if (v->quantized_params)
        json_object_set_new(doc, "quantized_params", json_integer((json_int_t)v->quantized_params));
    json_object_set_new(doc, "activation_bytes", json_integer((json_int_t)v->activation_bytes));
    json_object_set_new(doc, "non_torch_bytes", json_integer((json_int_t)v->non_torch_bytes));
    json_object_set_new(doc, "kv_cache_bytes", json_integer((json_int_t)v->kv_cache_bytes));
    json_object_set_new(doc, "block_bytes", json_integer((json_int_t)v->block_bytes));
    json_object_set_new(doc, "num_blocks", json_integer((json_int_t)v->num_blocks));
    json_object_set_new(doc, "blocks_per_seq", json_integer((json_int_t)v->blocks_per_seq));
    json_object_set_new(doc, "max_concurrent_seqs", json_integer((json_int_t)v->max_concurrent_seqs));
    json_object_set_new(doc, "max_concurrency", json_real(v->max_concurrency));
    json_object_set_new(doc, "fits", json_boolean(v->fits));
    json_t *as = json_array();
    json_array_append_new(as, json_pack("{ss ss}", "assumption",
        "KV blocks = (gpu_memory_utilization x total - weights - the profiling forward's peak - "
        "memory outside PyTorch) / block bytes; CUDA graphs not counted",
        "source", "vLLM worker determine_num_available_blocks / Worker.determine_available_memory"));
    json_array_append_new(as, json_pack("{ss ss}", "assumption",
        "the profiling forward runs max_num_batched_tokens tokens (default max(max_model_len, 8192), "
        "chunked prefill) and computes fp32 logits for up to max_num_seqs sequences",
        "source", "vLLM EngineArgs defaults; model_runner profile_run"));
    json_object_set_new(doc, "assumptions", as);
    return od_cli_print_json(doc);
}

/* A parameter count: 124000000, 6.7e9, 7B, 350M (K/M/B/T = 1e3..1e12). */
static int parse_count(const char *opt, const char *text, uint64_t *out)
{
    char *end;
    double v = strtod(text, &end);
    double mul = 1;
    if (end != text && *end && !end[1]) {
        switch (*end) {
        case 'k': case 'K': mul = 1e3; end++; break;
        case 'm': case 'M': mul = 1e6; end++; break;
        case 'b': case 'B': mul = 1e9; end++; break;
        case 't': case 'T': mul = 1e12; end++; break;
        }
    }
    v *= mul;
    if (end == text || *end || !(v >= 1 && v < 1e15))
        return od_cli_usage_error(CMD, "%s: '%s' is not a parameter count (e.g. 6.7e9, 7B, 350M)",
                                  opt, text);
    *out = (uint64_t)(v + 0.5);
    return 0;
}

static int parse_u64(const char *opt, const char *text, long max, uint64_t *out)
{
    long v;
    int rc = od_cli_parse_int_opt(CMD, opt, text, 0, max, &v);
    if (!rc)
        *out = (uint64_t)v;
    return rc;
}

int od_cmd_plan(int argc, char **argv)
{
    static const char *const tasks[] = {"train", "infer", NULL};
    static const char *const frameworks[] = {"torch", "deepspeed", "fsdp", "ddp", NULL};
    static const char *const fsdps[] = {"full", "grad-op", "hybrid", NULL};
    static const char *const offloads[] = {"cpu", "none", NULL};
    static const char *const weights[] = {"bf16", "fp16", "fp32", "int8", "int4", "gptq-int4",
                                          "awq-int4", "nf4", "fp8", NULL};
    static const char *const kvc[] = {"none", "dynamic", "static", "paged", NULL};
    static const char *const kvd[] = {"bf16", "fp16", "fp32", "fp8", "int8", NULL};
    static const int kvd_bytes[] = {2, 2, 4, 1, 1};
    static const char *const base_names[] = {"nf4", "int8", "bf16", NULL};
    static const char *const engines[] = {"transformers", "vllm", NULL};
    od_vllm_config vc;
    od_vllm_config_defaults(&vc);
    int vllm = 0, vllm_flag = 0, task_given = 0;
    od_workload w;
    od_workload_defaults(&w); /* inference: the dynamic KV cache generate() uses */
    const char *config = NULL, *gpu_name = NULL, *model_arg = NULL;
    uint64_t params = 0, layers = 0, hidden = 0, heads = 0, kvh = 0, inter = 0, vocab = 0;
    uint64_t memory = 0, zero = 0;
    int json = 0, fail_if = 0, rc = 0, v, kv_given = 0, framework_given = 0, fsdp_strategy = 0,
        zero_given = 0;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", OPTS, NULL)) != -1) {
        switch (c) {
        case 'h': fputs(USAGE, stdout); return OD_EXIT_OK;
        case O_CONFIG: config = optarg; break;
        case O_MODEL: model_arg = optarg; break;
        case O_LORA_TARGETS:
            if (od_lora_targets_parse(optarg, &w.lora_targets))
                rc = od_cli_usage_error(CMD, "--lora-targets: '%s' is not a list of q, k, v, o, "
                                        "gate, up, down, nor all-linear", optarg);
            break;
        case O_BASE_WEIGHTS:
            if (!(rc = choice("--base-weights", optarg, base_names, &v)))
                w.base_weights = (od_base_weights)(v + 1);
            break;
        case O_FREEZE: rc = parse_u64("--freeze", optarg, 4096, &w.freeze_layers); break;
        case O_PARAMS: rc = parse_count("--params", optarg, &params); break;
        case O_LAYERS: rc = parse_u64("--layers", optarg, 4096, &layers); break;
        case O_HIDDEN: rc = parse_u64("--hidden", optarg, 1 << 22, &hidden); break;
        case O_HEADS: rc = parse_u64("--heads", optarg, 1 << 16, &heads); break;
        case O_KVHEADS: rc = parse_u64("--kv-heads", optarg, 1 << 16, &kvh); break;
        case O_INTER: rc = parse_u64("--intermediate", optarg, 1 << 22, &inter); break;
        case O_VOCAB: rc = parse_u64("--vocab", optarg, 1 << 22, &vocab); break;
        case O_TASK: if (!(rc = choice("--task", optarg, tasks, &v))) { w.task = (od_task)v; task_given = 1; } break;
        case OD_FLAG_BATCH: case OD_FLAG_SEQ: case OD_FLAG_PRECISION: case OD_FLAG_OPTIMIZER:
        case OD_FLAG_ATTENTION: case OD_FLAG_CHECKPOINTING:
            rc = od_cli_workload_flag(CMD, c, optarg, &w);
            break;
        case O_ACCUM: rc = parse_u64("--grad-accum", optarg, 1 << 20, &w.grad_accum); break;
        case O_ZERO: rc = parse_u64("--zero", optarg, 3, &zero); w.zero = (int)zero; zero_given = 1; break;
        case O_DP: rc = parse_u64("--dp", optarg, 1 << 20, &w.dp); break;
        case O_TP: rc = parse_u64("--tp", optarg, 1024, &w.tp); break;
        case O_PP: rc = parse_u64("--pp", optarg, 4096, &w.pp); break;
        case O_CP: rc = parse_u64("--cp", optarg, 1024, &w.cp); break;
        case O_VPP: rc = parse_u64("--vpp", optarg, 1024, &w.vpp); break;
        case O_LORA: rc = parse_u64("--lora-rank", optarg, 65536, &w.lora_rank); break;
        case O_CHUNKED: w.chunked_loss = 1; break;
        case O_OFFLOAD: w.offload_optimizer = 1; break;
        case O_FRAMEWORK:
            if (!(rc = choice("--framework", optarg, frameworks, &v))) {
                w.deepspeed = v == 1;
                w.ddp = v == 3;
                if (v == 2 && !w.fsdp)
                    w.fsdp = OD_FSDP_FULL;
                if (v != 2)
                    w.fsdp = OD_FSDP_NONE;
                framework_given = 1;
            }
            break;
        case O_FSDP:
            if (!(rc = choice("--fsdp", optarg, fsdps, &v)))
                fsdp_strategy = v + 1;
            break;
        case O_BUCKET_VIEW: w.ddp_bucket_view = 1; break;
        case O_SP: w.sp = 1; break;
        case O_ENGINE: if (!(rc = choice("--engine", optarg, engines, &v))) vllm = v == 1; break;
        case O_GMU: {
            char *end;
            vc.gpu_memory_utilization = strtod(optarg, &end);
            if (end == optarg || *end || !(vc.gpu_memory_utilization > 0 && vc.gpu_memory_utilization <= 1))
                rc = od_cli_usage_error(CMD, "--gpu-memory-utilization: '%s' is not a fraction in (0, 1]", optarg);
            vllm_flag = 1;
            break;
        }
        case O_MAXLEN: rc = parse_u64("--max-model-len", optarg, 1 << 24, &vc.max_model_len); vllm_flag = 1; break;
        case O_BLOCK: rc = parse_u64("--block-size", optarg, 1 << 16, &vc.block_size); vllm_flag = 1; break;
        case O_MAXSEQS: rc = parse_u64("--max-num-seqs", optarg, 1 << 20, &vc.max_num_seqs); vllm_flag = 1; break;
        case O_MAXTOK: rc = parse_u64("--max-num-batched-tokens", optarg, 1 << 24, &vc.max_num_batched_tokens); vllm_flag = 1; break;
        case O_OFF_OPT: if (!(rc = choice("--offload-optimizer", optarg, offloads, &v))) w.offload_optimizer = v == 0; break;
        case O_OFF_PARAMS: if (!(rc = choice("--offload-params", optarg, offloads, &v))) w.offload_params = v == 0; break;
        case O_ZINIT: w.zero_init = 1; break;
        case O_NODES: rc = parse_u64("--nodes", optarg, 1 << 16, &w.nodes); break;
        case O_PROMPT: rc = parse_u64("--prompt", optarg, 1 << 24, &w.prompt); break;
        case O_NEW: rc = parse_u64("--new-tokens", optarg, 1 << 24, &w.new_tokens); break;
        case O_WEIGHTS: if (!(rc = choice("--weights", optarg, weights, &v))) w.weights = (od_weights)v; break;
        case O_KVCACHE: if (!(rc = choice("--kv-cache", optarg, kvc, &v))) { w.kv_cache = (od_kv_cache)v; kv_given = 1; } break;
        case O_KVDTYPE: if (!(rc = choice("--kv-dtype", optarg, kvd, &v))) w.kv_bytes = kvd_bytes[v]; break;
        case O_PAGED:
            rc = parse_u64("--paged-block", optarg, 1 << 20, &w.paged_block);
            if (!rc && !w.paged_block)
                rc = od_cli_usage_error(CMD, "--paged-block must be at least 1");
            if (!rc && !kv_given)
                w.kv_cache = OD_KV_PAGED;
            break;
        case O_GPU: gpu_name = optarg; break;
        case O_MEMORY: rc = od_cli_parse_size_opt(CMD, "--memory", optarg, &memory); break;
        case O_JSON: json = 1; break;
        case O_FAIL: fail_if = 1; break;
        case ':': return od_cli_usage_error(CMD, "%s needs a value", argv[optind - 1]);
        default: return od_cli_unknown_option(CMD, ":h", OPTS, argv);
        }
        if (rc)
            return rc;
    }
    if (optind < argc)
        return od_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (fsdp_strategy) {
        if (framework_given && !w.fsdp)
            return od_cli_usage_error(CMD, "--fsdp needs --framework fsdp");
        w.fsdp = fsdp_strategy;
    }
    if (w.fsdp) { /* FULL_SHARD / HYBRID_SHARD are ZeRO-3, SHARD_GRAD_OP ZeRO-2 */
        int z = w.fsdp == OD_FSDP_GRAD_OP ? 2 : 3;
        if (zero_given && w.zero != z)
            return od_cli_usage_error(CMD, "--fsdp %s is ZeRO-%d: drop --zero %d", od_fsdp_name(w.fsdp), z, w.zero);
        w.zero = z;
    }
    if (vllm_flag && !vllm)
        return od_cli_usage_error(CMD, "--gpu-memory-utilization, --max-model-len, --block-size, "
                                  "--max-num-seqs and --max-num-batched-tokens need --engine vllm");
    if (vllm) {
        if (task_given && w.task != OD_TASK_INFER)
            return od_cli_usage_error(CMD, "--engine vllm serves a model: drop --task train");
        w.task = OD_TASK_INFER;
    }
    if (w.ddp_bucket_view && !w.ddp)
        return od_cli_usage_error(CMD, "--gradient-as-bucket-view needs --framework ddp");
    if (gpu_name && memory)
        return od_cli_usage_error(CMD, "give --gpu or --memory, not both");
    if (!memory && gpu_name == NULL)
        gpu_name = "h100-sxm";

    od_model m;
    od_safetensors_totals ck;
    memset(&ck, 0, sizeof ck);
    uint64_t config_params = 0;
    char model_dir[4096], config_path[4200];
    if (model_arg) {
        if (config)
            return od_cli_usage_error(CMD, "give --model or --config, not both");
        if ((rc = resolve_model(model_arg, model_dir, sizeof model_dir)))
            return rc;
        snprintf(config_path, sizeof config_path, "%s/config.json", model_dir);
        config = config_path;
    }
    if (config) {
        if (layers || hidden || params)
            return od_cli_usage_error(CMD, "--config already gives the sizes; drop --layers/--hidden/--params");
        if ((rc = read_config(config, &m)))
            return rc;
        if (model_arg) {
            od_param_counts pc;
            od_model_count(&m, &pc);
            config_params = pc.total;
            if ((rc = read_checkpoint(model_dir, m.quant_bits, &ck)))
                return rc;
            if (ck.files) {
                m.ckpt_params = ck.params;
                m.ckpt_weight_bytes = ck.weight_bytes;
                m.ckpt_quantized = ck.packed_params > 0;
            }
        }
    } else {
        od_error err;
        if (!layers || !hidden)
            return od_cli_usage_error(CMD, "give --config FILE, or --layers and --hidden");
        if (od_model_from_sizes(params, layers, hidden, heads, kvh, inter, vocab, &m, &err) != OD_OK)
            return od_cli_usage_error(CMD, "%s", err.msg);
    }
    od_gpu gpu;
    od_error err;
    if (memory) {
        od_gpu_custom(memory, &gpu);
    } else if (od_gpu_lookup(gpu_name, &gpu, &err) != OD_OK) {
        return od_cli_usage_error(CMD, "--gpu: %s", err.msg);
    }
    w.workspace_bytes = gpu.workspace_bytes;
    if (vllm) {
        if (!vc.max_model_len)
            vc.max_model_len = m.max_positions;
        if (!vc.max_model_len)
            return od_cli_usage_error(CMD, "the config gives no context length: give --max-model-len");
        od_vllm_plan vp;
        if (od_plan_vllm(&m, &w, &gpu, &vc, &vp, &err) != OD_OK)
            return od_cli_usage_error(CMD, "%s", err.msg);
        int out = json ? print_vllm_json(&m, &w, &gpu, &vc, &vp) : (print_vllm_text(&m, &w, &gpu, &vc, &vp), 0);
        if (!out && fail_if && !vp.fits)
            out = OD_EXIT_NOTHING;
        return out;
    }
    od_plan *p = malloc(sizeof *p);
    if (!p) {
        od_fail(&err, OD_ERR_NOMEM, "out of memory");
        return od_cli_report_error(NULL, &err);
    }
    if (od_plan_compute(&m, &w, &gpu, p, &err) != OD_OK) {
        free(p);
        return od_cli_usage_error(CMD, "%s", err.msg);
    }
    int out = OD_EXIT_OK;
    if (json)
        out = print_json(&m, &w, &gpu, p, model_arg ? &ck : NULL, config_params);
    else
        print_text(&m, &w, &gpu, p, model_arg ? &ck : NULL, config_params);
    if (!out && fail_if && !p->fits)
        out = OD_EXIT_NOTHING;
    free(p);
    return out;
}
