/* cmd_plan.c - `oomdoc plan`: will it fit, the largest batch, and the cheapest recipes
 * that make it fit; a table for comma-listed flags; vLLM's KV blocks. Argument parsing,
 * reading the model's files and printing only: the model is lib/model/estimate and plan,
 * the --json documents lib/render/plan_doc. */
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
#include "read/gguf.h"
#include "read/hfconfig.h"
#include "read/safetensors.h"
#include "render/plan_doc.h"

#include <dirent.h>
#include <sys/stat.h>

#define CMD "plan"
#define MAX_CONFIG_BYTES (16u << 20)
#define MAX_GGUF_HEADER ((uint64_t)256 << 20)
#define MAX_ROWS 64

static const char USAGE[] =
    "usage: oomdoc plan (--config config.json | --model DIR|FILE.gguf|ORG/NAME |\n"
    "                    --layers L --hidden H [--params N] ...)\n"
    "                   [training, inference or serving flags] [--gpu NAME[,NAME...] | --memory SIZE]\n"
    "                   [--json] [--fail-if-not-fits]\n"
    "\n"
    "Estimate the peak GPU memory of a training step or a generate() call from a Hugging\n"
    "Face config.json, say whether it fits, find the largest batch that does, and the\n"
    "cheapest recipes (changes together) that make it fit. A comma list in --precision,\n"
    "--weights, --zero, --offload-optimizer, --offload-params or --gpu gives a table: one\n"
    "row per combination, as accelerate's estimate-memory and DeepSpeed's estimators print.\n"
    "\n"
    "Model:\n"
    "  --model DIR|FILE|ORG/NAME  a checkpoint directory: config.json, and the safetensors\n"
    "                         headers (model.safetensors, or the index and its shards) for\n"
    "                         the exact parameter count and weight bytes (GPTQ/AWQ and\n"
    "                         bitsandbytes checkpoints load as stored); a GGUF file (its\n"
    "                         header: metadata and every tensor's type and size, never the\n"
    "                         data); a Hugging Face cache folder models--ORG--NAME; or\n"
    "                         ORG/NAME in the local cache ($HF_HOME/hub, else\n"
    "                         ~/.cache/huggingface/hub; never downloaded)\n"
    "  --config FILE          Hugging Face config.json (gpt2, llama, mistral, qwen2, qwen3,\n"
    "                         gemma, gemma2, gemma3_text, phi, phi3, falcon, gpt_neox, gptj,\n"
    "                         opt, bloom, mpt, starcoder2, olmo, olmo2, cohere, mixtral,\n"
    "                         qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3, dbrx, jamba\n"
    "                         (Mamba + attention), mamba (SSM state, no KV cache), encoders\n"
    "                         bert, roberta, deberta-v2, encoder-decoders t5, bart, whisper;\n"
    "                         vision vit, clip, clip_vision_model, siglip,\n"
    "                         siglip_vision_model; diffusers UNet2DConditionModel and DiT\n"
    "                         transformers by _class_name; any other with the generic\n"
    "                         fields, read as Llama)\n"
    "  --layers L --hidden H  a Llama-style model without a config; --params N (6.7e9, 7B)\n"
    "                         solves the MLP width to match N parameters\n"
    "  --params N --heads A --kv-heads G --intermediate I --vocab V  (optional)\n"
    "Training (--task train, the default):\n"
    "  --batch B              micro-batch per GPU (default 1; images or samples for vision\n"
    "                         and diffusion models, whose tokens the config fixes)\n"
    "  --seq S                sequence length (default 1024)\n"
    "  --precision P          fp32, amp-bf16 (default), amp-fp16, bf16, mixed-fp16,\n"
    "                         mixed-bf16 (half weights, fp32 master weights in the optimizer)\n"
    "  --main-grads G         fp32 (default under mixed precision: DeepSpeed's fp32 gradient\n"
    "                         partition, Megatron's main_grad buffer), bf16 (16-bit only)\n"
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
    "                         activations and K/V; weights, gradients, optimizer state unsplit\n"
    "  --pp N                 pipeline stages, 1F1B: stage r holds its layers for\n"
    "                         min(N - r, --grad-accum) micro-batches in flight; the first\n"
    "                         holds the embedding, the last the head and the loss\n"
    "  --stage S              max (default: the more loaded), first, last\n"
    "  --first-stage-layers N --last-stage-layers N  uneven stages (the rest split evenly)\n"
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
    "  --framework F          torch (default), deepspeed (model states as DeepSpeed's own\n"
    "                         estimators lay them out; host RAM per node), megatron\n"
    "                         (Megatron-Core: bf16 weights, fp32 main gradients, the\n"
    "                         distributed optimizer as --zero 1, per pipeline stage, its TE\n"
    "                         layer's activations), fsdp (PyTorch FSDP: fp32 shards, 16-bit\n"
    "                         units gathered one at a time + the prefetched one), ddp (full\n"
    "                         replicas + gradient buckets holding a copy of every gradient)\n"
    "  --ep N --etp N         expert parallel / expert tensor parallel (megatron, MoE)\n"
    "  --fsdp S               full (FULL_SHARD, default), grad-op (SHARD_GRAD_OP: gathered\n"
    "                         from forward through backward), hybrid (sharded within a node)\n"
    "  --gradient-as-bucket-view  DDP's gradients are views of its buckets (no copies)\n"
    "  --offload-optimizer D  none (default), cpu, nvme (DeepSpeed ZeRO-3: ZeRO-Infinity)\n"
    "  --offload-params D     none (default), cpu, nvme (ZeRO-3 under deepspeed)\n"
    "  --zero-init            ZeRO-3 with deepspeed.zero.Init (no full model per process)\n"
    "  --buffer-factor F      DeepSpeed's additional_buffer_factor on host RAM (default 1.5)\n"
    "  --nodes N              the --dp GPUs are N nodes of dp/N each (default 1)\n"
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
    "Serving (--engine vllm): vLLM V1's KV blocks after the weights and its profiling forward:\n"
    "  --gpu-memory-utilization U  fraction of the GPU vLLM may take (default 0.9)\n"
    "  --kv-cache-memory SIZE the KV cache's size instead (vLLM's --kv-cache-memory)\n"
    "  --max-model-len L      tokens a sequence may reach (default: the config's context)\n"
    "  --block-size B         tokens a KV block holds (default 16)\n"
    "  --max-num-seqs N       sequences a step may schedule (default: V1's for the GPU)\n"
    "  --max-num-batched-tokens N  tokens a step and the profiling forward run (default:\n"
    "                         8192 serve / 16384 llm on >= 70 GiB GPUs but A100, else\n"
    "                         2048 / 8192)\n"
    "  --entrypoint E         serve (default: vllm serve) or llm (the LLM class)\n"
    "  --enforce-eager        no CUDA graphs (else their pool is counted outside the budget)\n"
    "  --disable-hybrid-kv-cache-manager  sliding-window layers allocated as full ones\n"
    "  (with --weights, --kv-dtype, --tp, --pp; --model for a quantized checkpoint)\n"
    "Target:\n"
    "  --gpu NAME[,NAME...]   t4, v100-16, a10g, l4, rtx4090, rtx3090, v100-32, a100-40,\n"
    "                         l40s, a6000, mi250x, h100-sxm (default; alias h100-80),\n"
    "                         h100-pcie, a100-80, h100-nvl, h200, b200, mi300x, or the name\n"
    "                         nvidia-smi prints (\"NVIDIA A100-SXM4-80GB\"); Apple m1-16 ..\n"
    "                         m2-ultra-192 (number = RAM in GB)\n"
    "  --memory SIZE          any device: usable memory, e.g. 80GiB\n"
    "Output:\n"
    "  --json                 JSON (schema_version 1, sizes in bytes)\n"
    "  --fail-if-not-fits     exit 1 when the workload does not fit (any row of a table)\n"
    "  -h, --help             this help\n"
    "\n"
    "Examples:\n"
    "  oomdoc plan --config examples/configs/llama-160m.json --batch 8 --seq 2048 \\\n"
    "              --precision amp-bf16 --optimizer adamw --gpu h200\n"
    "  oomdoc plan --config examples/configs/llama-160m.json --task infer \\\n"
    "              --weights bf16,int8,int4 --gpu l4,a100-80\n"
    "\n" OD_EXIT_CODES_HELP;

enum {
    O_CONFIG = 256, O_PARAMS, O_LAYERS, O_HIDDEN, O_HEADS, O_KVHEADS, O_INTER, O_VOCAB,
    O_GPU, O_MEMORY, O_JSON, O_FAIL, O_MODEL, O_ENGINE, O_GMU, O_MAXLEN, O_BLOCK, O_MAXSEQS,
    O_MAXTOK, O_ENTRY, O_EAGER, O_KVMEM, O_NOHYBRID
};

static const struct option OPTS[] = {
    {"config", required_argument, 0, O_CONFIG}, {"params", required_argument, 0, O_PARAMS},
    {"layers", required_argument, 0, O_LAYERS}, {"hidden", required_argument, 0, O_HIDDEN},
    {"heads", required_argument, 0, O_HEADS}, {"kv-heads", required_argument, 0, O_KVHEADS},
    {"intermediate", required_argument, 0, O_INTER}, {"vocab", required_argument, 0, O_VOCAB},
    OD_WORKLOAD_OPTIONS,
    {"gpu", required_argument, 0, O_GPU}, {"memory", required_argument, 0, O_MEMORY},
    {"json", no_argument, 0, O_JSON}, {"fail-if-not-fits", no_argument, 0, O_FAIL},
    {"help", no_argument, 0, 'h'}, {"model", required_argument, 0, O_MODEL},
    {"engine", required_argument, 0, O_ENGINE},
    {"gpu-memory-utilization", required_argument, 0, O_GMU},
    {"max-model-len", required_argument, 0, O_MAXLEN}, {"block-size", required_argument, 0, O_BLOCK},
    {"max-num-seqs", required_argument, 0, O_MAXSEQS},
    {"max-num-batched-tokens", required_argument, 0, O_MAXTOK},
    {"entrypoint", required_argument, 0, O_ENTRY}, {"enforce-eager", no_argument, 0, O_EAGER},
    {"kv-cache-memory", required_argument, 0, O_KVMEM},
    {"disable-hybrid-kv-cache-manager", no_argument, 0, O_NOHYBRID},
    {0, 0, 0, 0}};

/* A comma-listed flag: one table column. */
typedef struct {
    int opt;                    /* the flag's code (O_GPU for --gpu) */
    const char *name;           /* column name: "weights", "gpu" ... */
    char *text;                 /* the list, split in place */
    const char *value[16];
    size_t n;
} axis;

/* Everything the command line says. */
typedef struct {
    od_workload w;
    od_vllm_config vc;
    int vllm, vllm_flag, task_given, seq_given, prompt_given, json, fail_if;
    const char *config, *model_arg, *gpu_name;
    uint64_t params, layers, hidden, heads, kvh, inter, vocab, memory;
    axis ax[OD_PLAN_MAX_AXES];
    size_t n_axes;
} args;

/* What the model files say. */
typedef struct {
    od_model m;
    od_safetensors_totals ck;
    od_gguf *gguf;
    int have_ck;
    uint64_t config_params;
} loaded;

static const char *iec(uint64_t b, char *buf) { return od_format_iec(b, buf, 32); }

static int choice(const char *opt, const char *text, const char *const *names, int *out)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(text, names[i])) {
            *out = i;
            return 0;
        }
    char list[160] = "";
    for (int j = 0; names[j]; j++) {
        strncat(list, j ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, names[j], sizeof list - strlen(list) - 1);
    }
    return od_cli_usage_error(CMD, "%s: '%s' is not one of %s", opt, text, list);
}

static int parse_u64(const char *opt, const char *text, long max, uint64_t *out)
{
    long v;
    int rc = od_cli_parse_int_opt(CMD, opt, text, 0, max, &v);
    if (!rc)
        *out = (uint64_t)v;
    return rc;
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


/* ---- reading the model -------------------------------------------------------------- */

/* Read a GGUF file's header, growing the read until the parser has all of it. */
static int read_gguf(const char *path, loaded *ld)
{
    int rc;
    FILE *f = od_cli_open(path, &rc);
    if (!f)
        return rc;
    uint64_t size = od_cli_file_size(f);
    od_error err;
    od_gguf *g = calloc(1, sizeof *g);
    size_t cap = 1 << 20, len = 0;
    uint8_t *buf = NULL;
    od_status st = g ? OD_OK : od_fail(&err, OD_ERR_NOMEM, "out of memory reading the GGUF header");
    for (;;) {
        if (st != OD_OK)
            break;
        if (cap > size)
            cap = (size_t)size;
        uint8_t *nb = realloc(buf, cap ? cap : 1);
        if (!nb) {
            st = od_fail(&err, OD_ERR_NOMEM, "out of memory reading the GGUF header");
            break;
        }
        buf = nb;
        len += fread(buf + len, 1, cap - len, f);
        st = od_gguf_parse(buf, len, len < cap ? len : size, g, &err);
        if (st != OD_OK || !g->need_bytes)
            break;
        if (g->need_bytes > MAX_GGUF_HEADER) {
            st = od_fail(&err, OD_ERR_LIMIT, "a GGUF header over 256 MiB is absurd");
            break;
        }
        cap = g->need_bytes > 2 * (uint64_t)cap ? (size_t)g->need_bytes : 2 * cap;
    }
    free(buf);
    od_cli_close(f);
    if (st != OD_OK) {
        free(g);
        return od_cli_report_error(path, &err);
    }
    st = od_hfconfig_parse(g->config, strlen(g->config), &ld->m, &err);
    if (st != OD_OK) {
        od_fail(&err, err.status, "the GGUF metadata (%s) as a config: %s", g->architecture, err.msg);
        free(g);
        return od_cli_report_error(path, &err);
    }
    if (ld->m.generic)
        fprintf(stderr, "oomdoc: plan: warning: %s: GGUF architecture \"%s\" is not one oomdoc knows; "
                "read as a Llama-style block\n", path, g->architecture);
    od_param_counts pc;
    od_model_count(&ld->m, &pc);
    ld->config_params = pc.total;
    ld->ck = g->totals;
    ld->have_ck = 1;
    ld->gguf = g;
    ld->m.ckpt_params = g->totals.params;
    ld->m.ckpt_weight_bytes = g->totals.weight_bytes;
    ld->m.ckpt_quantized = g->totals.packed_params > 0;
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static int load_model(const args *a, loaded *ld)
{
    int rc;
    memset(ld, 0, sizeof *ld);
    if (a->model_arg && a->config)
        return od_cli_usage_error(CMD, "give --model or --config, not both");
    if ((a->model_arg || a->config) && (a->layers || a->hidden || a->params))
        return od_cli_usage_error(CMD, "--config already gives the sizes; drop --layers/--hidden/--params");
    if (a->model_arg && is_file(a->model_arg) && ends_with(a->model_arg, ".gguf"))
        return read_gguf(a->model_arg, ld);
    if (a->model_arg) {
        char dir[4096], path[4200];
        if ((rc = resolve_model(a->model_arg, dir, sizeof dir)))
            return rc;
        snprintf(path, sizeof path, "%s/config.json", dir);
        if ((rc = read_config(path, &ld->m)))
            return rc;
        od_param_counts pc;
        od_model_count(&ld->m, &pc);
        ld->config_params = pc.total;
        if ((rc = read_checkpoint(dir, ld->m.quant_bits, &ld->ck)))
            return rc;
        ld->have_ck = 1;
        if (ld->ck.files) {
            ld->m.ckpt_params = ld->ck.params;
            ld->m.ckpt_weight_bytes = ld->ck.weight_bytes;
            ld->m.ckpt_quantized = ld->ck.packed_params > 0;
        }
        return 0;
    }
    if (a->config)
        return read_config(a->config, &ld->m);
    od_error err;
    if (!a->layers || !a->hidden)
        return od_cli_usage_error(CMD, "give --config FILE, or --layers and --hidden");
    if (od_model_from_sizes(a->params, a->layers, a->hidden, a->heads, a->kvh, a->inter, a->vocab, &ld->m,
                            &err) != OD_OK)
        return od_cli_usage_error(CMD, "%s", err.msg);
    return 0;
}

/* ---- the command line ---------------------------------------------------------------- */

/* A comma list: a table column; each value is checked now on a scratch copy. */
static int add_axis(args *a, int opt, const char *name, const char *text)
{
    if (a->n_axes >= OD_PLAN_MAX_AXES)
        return od_cli_usage_error(CMD, "at most %d comma-listed flags", OD_PLAN_MAX_AXES);
    axis *x = &a->ax[a->n_axes++];
    memset(x, 0, sizeof *x);
    x->opt = opt;
    x->name = name;
    x->text = strdup(text);
    if (!x->text)
        return od_cli_usage_error(CMD, "out of memory");
    for (char *p = x->text, *tok; (tok = strsep(&p, ","));) {
        if (!*tok)
            return od_cli_usage_error(CMD, "--%s: an empty value in '%s'", name, text);
        if (x->n >= 16)
            return od_cli_usage_error(CMD, "--%s: at most 16 values", name);
        x->value[x->n++] = tok;
        int rc;
        if (opt == O_GPU) {
            od_gpu g;
            od_error err;
            if (od_gpu_lookup(tok, &g, &err) != OD_OK)
                return od_cli_usage_error(CMD, "--gpu: %s", err.msg);
        } else {
            od_workload scratch = a->w;
            if ((rc = od_cli_workload_flag(CMD, opt, tok, &scratch)))
                return rc;
        }
    }
    return 0;
}

static void free_axes(args *a)
{
    for (size_t i = 0; i < a->n_axes; i++)
        free(a->ax[i].text);
}

/* The serving flags. */
static int vllm_flag(args *a, int c, const char *text)
{
    static const char *const engines[] = {"transformers", "vllm", NULL};
    static const char *const entries[] = {"serve", "llm", NULL};
    int v, rc = 0;
    switch (c) {
    case O_ENGINE:
        if (!(rc = choice("--engine", text, engines, &v)))
            a->vllm = v == 1;
        return rc;
    case O_GMU: {
        char *end;
        a->vc.gpu_memory_utilization = strtod(text, &end);
        if (end == text || *end || !(a->vc.gpu_memory_utilization > 0 && a->vc.gpu_memory_utilization <= 1))
            return od_cli_usage_error(CMD, "--gpu-memory-utilization: '%s' is not a fraction in (0, 1]", text);
        break;
    }
    case O_MAXLEN: rc = parse_u64("--max-model-len", text, 1 << 24, &a->vc.max_model_len); break;
    case O_BLOCK: rc = parse_u64("--block-size", text, 1 << 16, &a->vc.block_size); break;
    case O_MAXSEQS: rc = parse_u64("--max-num-seqs", text, 1 << 20, &a->vc.max_num_seqs); break;
    case O_MAXTOK: rc = parse_u64("--max-num-batched-tokens", text, 1 << 24, &a->vc.max_num_batched_tokens); break;
    case O_ENTRY:
        if (!(rc = choice("--entrypoint", text, entries, &v)))
            a->vc.entry = v ? OD_VLLM_LLM : OD_VLLM_SERVE;
        break;
    case O_EAGER: a->vc.enforce_eager = 1; break;
    case O_KVMEM: rc = od_cli_parse_size_opt(CMD, "--kv-cache-memory", text, &a->vc.kv_cache_memory_bytes); break;
    case O_NOHYBRID: a->vc.disable_hybrid = 1; break;
    default: return -1;
    }
    a->vllm_flag = 1;
    return rc;
}

/* One option; 0, an exit code, or -1 for 'h' (help printed). */
static int one_option(args *a, int c, char **argv)
{
    int rc = vllm_flag(a, c, optarg);
    if (rc >= 0)
        return rc;
    switch (c) {
    case 'h': fputs(USAGE, stdout); return -1;
    case O_CONFIG: a->config = optarg; return 0;
    case O_MODEL: a->model_arg = optarg; return 0;
    case O_PARAMS: return parse_count("--params", optarg, &a->params);
    case O_LAYERS: return parse_u64("--layers", optarg, 4096, &a->layers);
    case O_HIDDEN: return parse_u64("--hidden", optarg, 1 << 22, &a->hidden);
    case O_HEADS: return parse_u64("--heads", optarg, 1 << 16, &a->heads);
    case O_KVHEADS: return parse_u64("--kv-heads", optarg, 1 << 16, &a->kvh);
    case O_INTER: return parse_u64("--intermediate", optarg, 1 << 22, &a->inter);
    case O_VOCAB: return parse_u64("--vocab", optarg, 1 << 22, &a->vocab);
    case O_GPU:
        if (strchr(optarg, ','))
            return add_axis(a, O_GPU, "gpu", optarg);
        a->gpu_name = optarg;
        return 0;
    case O_MEMORY: return od_cli_parse_size_opt(CMD, "--memory", optarg, &a->memory);
    case O_JSON: a->json = 1; return 0;
    case O_FAIL: a->fail_if = 1; return 0;
    case ':': return od_cli_usage_error(CMD, "%s needs a value", argv[optind - 1]);
    default: break;
    }
    if (optarg && strchr(optarg, ',') && od_cli_workload_listable(c))
        return add_axis(a, c, od_cli_workload_flag_name(c) + 2, optarg);
    if (c == OD_FLAG_TASK)
        a->task_given = 1;
    if (c == OD_FLAG_SEQ)
        a->seq_given = 1;
    if (c == OD_FLAG_PROMPT)
        a->prompt_given = 1;
    rc = od_cli_workload_flag(CMD, c, optarg, &a->w);
    if (rc < 0)
        return od_cli_unknown_option(CMD, ":h", OPTS, argv);
    return rc;
}

static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    od_workload_defaults(&a->w); /* inference: the dynamic KV cache generate() uses */
    od_vllm_config_defaults(&a->vc);
    optind = 1;
    opterr = 0;
    int c, rc;
    while ((c = getopt_long(argc, argv, ":h", OPTS, NULL)) != -1)
        if ((rc = one_option(a, c, argv)))
            return rc;
    if (optind < argc)
        return od_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if ((rc = od_cli_workload_done(CMD, &a->w)))
        return rc;
    if (a->vllm_flag && !a->vllm)
        return od_cli_usage_error(CMD, "--gpu-memory-utilization, --max-model-len, --block-size, "
                                  "--max-num-seqs and --max-num-batched-tokens need --engine vllm");
    if (a->vllm) {
        if (a->task_given && a->w.task != OD_TASK_INFER)
            return od_cli_usage_error(CMD, "--engine vllm serves a model: drop --task train");
        a->w.task = OD_TASK_INFER;
        a->vc.pp = a->w.pp;
        a->w.pp = 1;
    }
    int gpu_axis = 0;
    for (size_t i = 0; i < a->n_axes; i++)
        gpu_axis |= a->ax[i].opt == O_GPU;
    if ((a->gpu_name || gpu_axis) && a->memory)
        return od_cli_usage_error(CMD, "give --gpu or --memory, not both");
    if (!a->memory && !a->gpu_name)
        a->gpu_name = "h100-sxm";
    return 0;
}

/* ---- printing one plan --------------------------------------------------------------- */

static void print_model(const od_model *m, const od_estimate *e)
{
    if (m->unet) {
        printf("%smodel%s %s: %llu parameters, %zu levels (", od_c_bold, od_c_reset, m->model_type,
               (unsigned long long)e->params, m->unet_levels);
        for (size_t i = 0; i < m->unet_levels; i++)
            printf("%s%llu ch x %llu transformer blocks", i ? ", " : "", (unsigned long long)m->unet_channels[i],
                   (unsigned long long)m->unet_tlayers[i]);
        printf("), latent %llux%llu\n", (unsigned long long)m->latent_side, (unsigned long long)m->latent_side);
        return;
    }
    printf("%smodel%s %s: %llu parameters, %llu layers, hidden %llu, ", od_c_bold, od_c_reset,
           m->model_type, (unsigned long long)e->params, (unsigned long long)m->layers,
           (unsigned long long)m->hidden);
    if (m->ssm_layers < m->layers)
        printf("%llu/%llu heads, ", (unsigned long long)m->heads, (unsigned long long)m->kv_heads);
    if (m->ssm_layers)
        printf("%llu Mamba layers (state %llu, inner %llu), ", (unsigned long long)m->ssm_layers,
               (unsigned long long)m->ssm_state, (unsigned long long)m->ssm_inner);
    if (m->image_tokens)
        printf("%llu tokens a sample", (unsigned long long)m->image_tokens);
    else
        printf("vocab %llu", (unsigned long long)m->vocab);
    if (m->experts)
        printf(", %llu experts (top %llu)", (unsigned long long)m->experts,
               (unsigned long long)m->experts_per_token);
    printf("\n");
}

static void print_checkpoint(const loaded *ld)
{
    char x[32], y[32];
    const od_safetensors_totals *ck = &ld->ck;
    if (!ld->have_ck)
        return;
    if (!ck->files) {
        printf("checkpoint: no safetensors files beside config.json: parameters counted from it\n");
        return;
    }
    if (ld->gguf) {
        const od_gguf *g = ld->gguf;
        printf("checkpoint: GGUF v%u (%s%s%s), %llu tensors, %s of weights:", g->version, g->architecture,
               g->name[0] ? ", " : "", g->name, (unsigned long long)ck->tensors, iec(ck->weight_bytes, x));
        for (size_t i = 0; i < g->n_types; i++)
            printf("%s %s %llu tensors %s", i ? ";" : "", g->types[i].type, (unsigned long long)g->types[i].tensors,
                   iec(g->types[i].bytes, y));
        printf("\n");
    } else {
        printf("checkpoint: %llu tensors in %llu safetensors file%s, %s of weights",
               (unsigned long long)ck->tensors, (unsigned long long)ck->files, ck->files == 1 ? "" : "s",
               iec(ck->weight_bytes, x));
        if (ck->quant[0])
            printf(" (%s: %llu parameters packed, %s of scales and zeros)", ck->quant,
                   (unsigned long long)ck->packed_params, iec(ck->quant_meta_bytes, y));
    }
    if (ck->params == ld->config_params)
        printf("%sthe config's layout counts the same\n", ld->gguf ? "  " : "; ");
    else
        printf("%sthe config's layout counts %llu parameters (%+.2f%%)\n", ld->gguf ? "  " : "; ",
               (unsigned long long)ld->config_params,
               100.0 * ((double)ld->config_params - (double)ck->params) / (double)ck->params);
}

static void print_workload(const od_model *m, const od_workload *w, const od_estimate *e)
{
    if (w->task == OD_TASK_INFER) {
        printf("%sgenerate%s batch %llu, prompt %llu + %llu new tokens, %s weights, KV cache %s\n",
               od_c_bold, od_c_reset, (unsigned long long)w->batch, (unsigned long long)w->prompt,
               (unsigned long long)w->new_tokens,
               m->ckpt_quantized ? "the checkpoint's quantized" : od_weights_name(w->weights),
               od_kv_cache_name(w->kv_cache));
        return;
    }
    printf("%straining%s batch %llu x %s %llu, %s, %s, attention %s (%s kernel), checkpointing %s, "
           "grad-accum %llu\n", od_c_bold, od_c_reset, (unsigned long long)w->batch,
           m->image_tokens ? "tokens" : "seq", (unsigned long long)w->seq, od_precision_name(w->precision),
           od_optimizer_name(w->optimizer),
           strcmp(e->attention_kernel, "none") ? od_attention_name(w->attention) : "none",
           strcmp(e->attention_kernel, "none") ? e->attention_kernel : "Mamba mixers, no",
           od_ckpt_name(w->ckpt), (unsigned long long)w->grad_accum);
    if (w->lora_rank || w->freeze_layers) {
        char t[64];
        if (w->lora_rank)
            printf("LoRA rank %llu on %s, frozen base %s", (unsigned long long)w->lora_rank,
                   od_lora_targets_text(w->lora_targets, t, sizeof t),
                   w->base_weights ? od_base_weights_name(w->base_weights) : od_precision_name(w->precision));
        if (w->freeze_layers)
            printf("%sembeddings and the first %llu layers frozen", w->lora_rank ? "; " : "",
                   (unsigned long long)w->freeze_layers);
        printf("\n");
    }
    if (w->fsdp)
        printf("FSDP %s over %llu GPUs%s\n",
               w->fsdp == OD_FSDP_FULL ? "FULL_SHARD" : w->fsdp == OD_FSDP_GRAD_OP ? "SHARD_GRAD_OP" : "HYBRID_SHARD",
               (unsigned long long)w->dp, w->fsdp == OD_FSDP_HYBRID ? " (sharded within each node)" : "");
    if (w->ddp)
        printf("DDP over %llu GPUs, 25 MiB gradient buckets%s\n", (unsigned long long)w->dp,
               w->ddp_bucket_view ? " (gradients are views of them)" : " (a copy of every gradient)");
    if (w->megatron)
        printf("Megatron-Core: bf16 weights, %s main gradients, %s optimizer over %llu GPUs; tp %llu%s, pp "
               "%llu, cp %llu%s\n", w->main_grads == OD_MAIN_GRADS_BF16 ? "bf16" : "fp32",
               w->zero ? "distributed" : "replicated", (unsigned long long)w->dp, (unsigned long long)w->tp,
               w->sp ? " + sp" : "", (unsigned long long)w->pp, (unsigned long long)w->cp,
               w->ep > 1 ? ", expert parallel" : "");
    if (w->pp > 1)
        printf("pipeline stage %s of %llu: %llu layers, %llu parameters a GPU\n", e->stage_name,
               (unsigned long long)w->pp, (unsigned long long)e->stage_layers, (unsigned long long)e->stage_params);
}

static void print_breakdown(const od_workload *w, const od_estimate *e)
{
    char x[32], y[32];
    const od_breakdown *b = &e->at_peak;
    printf("\npeak allocated %s (in %s)\n", iec(e->peak_allocated_bytes, x), e->peak_phase);
    struct { const char *k; uint64_t v; } rows[] = {
        {"parameters", b->parameters}, {"gradients", b->gradients},
        {"optimizer states", b->optimizer_states}, {"activations", b->activations},
        {"logits and loss", b->logits_and_loss}, {"KV cache", b->kv_cache},
        {"temporaries", b->temporaries}, {"workspace", b->workspace}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].v)
            printf("  %-18s %12s\n", rows[i].k, iec(rows[i].v, x));
    if (w->task == OD_TASK_TRAIN && (w->deepspeed || e->host_bytes)) {
        printf("model states %s per GPU; host RAM %s per node", iec(e->model_states_bytes, x), iec(e->host_bytes, y));
        if (e->nvme_bytes)
            printf("; NVMe %s per node", iec(e->nvme_bytes, x));
        if (w->deepspeed)
            printf(" (DeepSpeed's estimate, %gx buffer)", w->buffer_factor > 0 ? w->buffer_factor : 1.5);
        printf("\n");
    }
}

static void print_details(const od_model *m, const od_workload *w, const od_estimate *e)
{
    char x[32], y[32], z[32], f[32];
    if (w->task == OD_TASK_INFER && e->quantized_params)
        printf("quantized: %llu block-linear parameters as %s; embeddings, lm_head and norms stay "
               "16-bit\n", (unsigned long long)e->quantized_params, od_weights_name(w->weights));
    if (w->task == OD_TASK_INFER && e->ssm_state_bytes_per_sequence && w->kv_cache != OD_KV_NONE)
        printf("Mamba state: %s a sequence (conv and SSM states of %llu layers, fixed), in the KV "
               "cache row\n", iec(e->ssm_state_bytes_per_sequence, x), (unsigned long long)m->ssm_layers);
    if (w->task == OD_TASK_INFER && e->moe_decode_copy_bytes_per_token)
        printf("MoE decode: transformers' batched_mm experts copy each routed expert's weights per "
               "token: %s a token in one MoE layer (from its source; not checked against a measured "
               "run)\n", iec(e->moe_decode_copy_bytes_per_token, x));
    printf("largest layer %s (what device_map=\"auto\" keeps on one device); largest module %llu "
           "parameters (ZeRO-3 gathers it)\n", iec(e->largest_layer_bytes, x),
           (unsigned long long)e->largest_module_params);
    if (w->task != OD_TASK_TRAIN)
        return;
    if (e->per_layer_activation_bytes)
        printf("per layer: %s saved for backward a micro-batch%s; this GPU holds %.4g of them "
               "(= %s)\n", iec(e->per_layer_activation_bytes, x),
               e->paper_layout ? " (Korthikanti et al. 2022's equations)" : "", e->activation_layers,
               iec((uint64_t)((double)e->per_layer_activation_bytes * e->activation_layers + 0.5), y));
    printf("phases: forward %s, backward %s, optimizer %s; first step %s\n", iec(e->forward_peak_bytes, x),
           iec(e->backward_peak_bytes, y), iec(e->optimizer_peak_bytes, z), iec(e->first_step_peak_bytes, f));
}

static void print_target(const od_workload *w, const od_gpu *gpu, const od_plan *p)
{
    char x[32], y[32], z[32];
    const od_estimate *e = &p->estimate;
    printf("reserved %s + CUDA context %s = device memory %s\n", iec(e->peak_reserved_bytes, x),
           iec(p->cuda_context_bytes, y), iec(p->device_memory_bytes, z));
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
}

/* At most 3 changes when it fits; the 5 cheapest recipes when it does not. */
static void print_recipes(const od_plan *p)
{
    char x[32], y[32];
    size_t show = p->n_mitigations < (p->fits ? 3u : 5u) ? p->n_mitigations : (p->fits ? 3u : 5u);
    if (show)
        printf("\n%s:\n", p->fits ? "it fits; changes that lower the peak, cheapest compute first"
                                  : "recipes that make it fit, cheapest compute first (on the GPUs it has first)");
    for (size_t i = 0; i < show; i++) {
        const od_mitigation *mm = &p->mitigations[i];
        printf("  %2zu. %s%s%s\n      peak %s, device %s: %s%s%s", i + 1, od_c_bold, mm->title, od_c_reset,
               iec(mm->peak_allocated_bytes, x), iec(mm->device_memory_bytes, y),
               mm->fits ? od_c_green : od_c_yellow, mm->fits ? "fits" : "does not fit", od_c_reset);
        if (mm->more_gpus)
            printf(" on %llu GPUs", (unsigned long long)mm->gpus);
        printf("\n      compute: %+.0f%% (%s); accuracy risk: %s", mm->overhead_pct, mm->overhead, mm->accuracy_risk);
        if (mm->needs[0])
            printf("; needs %s", mm->needs);
        if (mm->communication[0])
            printf("\n      communication: %s", mm->communication);
        printf("\n      oomdoc plan ... %s\n", mm->flags);
    }
    if (p->n_mitigations > show)
        printf("  (%zu more in --json)\n", p->n_mitigations - show);
    if (p->has_closest)
        printf("\n%sdoes not fit even with%s %s: peak %s, device %s\n", od_c_red, od_c_reset, p->closest.title,
               iec(p->closest.peak_allocated_bytes, x), iec(p->closest.device_memory_bytes, y));
}

static void print_text(const loaded *ld, const od_workload *w, const od_gpu *gpu, const od_plan *p)
{
    od_cli_color_init();
    print_model(&ld->m, &p->estimate);
    print_checkpoint(ld);
    print_workload(&ld->m, w, &p->estimate);
    print_breakdown(w, &p->estimate);
    print_details(&ld->m, w, &p->estimate);
    print_target(w, gpu, p);
    print_recipes(p);
}

/* ---- printing a vLLM plan ------------------------------------------------------------ */

static void print_vllm_text(const od_model *m, const od_workload *w, const od_gpu *gpu,
                            const od_vllm_config *c, const od_vllm_plan *v)
{
    char x[32], y[32], z[32];
    od_cli_color_init();
    printf("%smodel%s %s: %llu layers, hidden %llu, %llu/%llu heads, vocab %llu; %s weights", od_c_bold,
           od_c_reset, m->model_type, (unsigned long long)m->layers, (unsigned long long)m->hidden,
           (unsigned long long)m->heads, (unsigned long long)m->kv_heads, (unsigned long long)m->vocab,
           m->ckpt_quantized ? "the checkpoint's quantized" : od_weights_name(w->weights));
    if (w->tp > 1)
        printf(", tensor parallel %llu", (unsigned long long)w->tp);
    if (c->pp > 1)
        printf(", pipeline %llu (the fullest stage: %llu layers)", (unsigned long long)c->pp,
               (unsigned long long)v->stage_layers);
    printf("\n%svLLM%s on %s (%s): ", od_c_bold, od_c_reset, gpu->name, gpu->description);
    if (c->kv_cache_memory_bytes)
        printf("--kv-cache-memory %s (no profiling budget)\n", iec(c->kv_cache_memory_bytes, x));
    else
        printf("gpu_memory_utilization %.2f x %s = %s\n", c->gpu_memory_utilization, iec(gpu->memory_bytes, x),
               iec(v->budget_bytes, y));
    printf("  weights              %12s", iec(v->weights_bytes, x));
    if (v->quantized_params)
        printf("  (%s on %llu block-linear parameters; embeddings, lm_head, norms 16-bit)",
               od_weights_name(w->weights), (unsigned long long)v->quantized_params);
    printf("\n  activation peak      %12s  (profiling forward of %llu tokens; %llu sequences' logits)\n",
           iec(v->activation_bytes, x), (unsigned long long)v->max_num_batched_tokens,
           (unsigned long long)v->max_num_seqs);
    printf("  outside PyTorch      %12s  (CUDA context)\n", iec(v->non_torch_bytes, x));
    printf("  KV cache             %12s  = %llu blocks of %llu tokens, %s each (%llu layer%s x %s)\n",
           iec(v->kv_cache_bytes, x), (unsigned long long)v->num_blocks, (unsigned long long)c->block_size,
           iec(v->block_bytes, y), (unsigned long long)v->group_size, v->group_size == 1 ? "" : "s",
           iec(v->page_bytes, z));
    if (c->enforce_eager)
        printf("  CUDA graphs          none (--enforce-eager)\n");
    else
        printf("  CUDA graphs        + %12s  (captured after, outside the budget; estimated)\n",
               iec(v->cuda_graph_bytes, x));
    printf("device use %s of %s\n", iec(v->device_bytes, x), iec(gpu->memory_bytes, y));
    printf("KV heads per GPU %llu%s\n", (unsigned long long)v->kv_heads_per_gpu,
           m->kv_lora_rank ? " (MLA: the latent, whole on every rank)"
           : v->kv_replicated ? " (tp outnumbers the KV heads: copied, not split)" : "");
    if (v->n_groups > 1)
        printf("KV-cache groups: %llu of %llu layers (full and windowed layers share the blocks)\n",
               (unsigned long long)v->n_groups, (unsigned long long)v->group_size);
    printf("max model len %llu: %llu blocks a sequence; %s%llu sequences at once%s (maximum concurrency "
           "%.2fx)\n", (unsigned long long)c->max_model_len, (unsigned long long)v->blocks_per_seq,
           v->fits ? od_c_green : od_c_red, (unsigned long long)v->max_concurrent_seqs, od_c_reset,
           v->max_concurrency);
    if (v->hybrid)
        printf("%s the hybrid KV-cache manager: %llu blocks, %llu a sequence, concurrency %.2fx\n",
               c->disable_hybrid ? "with" : "without (--disable-hybrid-kv-cache-manager)",
               (unsigned long long)v->alt_num_blocks, (unsigned long long)v->alt_blocks_per_seq,
               v->alt_max_concurrency);
    if (!v->fits)
        printf("%sdoes NOT fit%s: one sequence of %llu tokens needs %llu blocks; lower --max-model-len, raise "
               "--gpu-memory-utilization, quantize the KV cache (--kv-dtype fp8) or add --tp\n", od_c_red,
               od_c_reset, (unsigned long long)c->max_model_len, (unsigned long long)v->blocks_per_seq);
}

/* ---- rows and tables ----------------------------------------------------------------- */

/* Row r's workload and GPU: the base with each listed flag at its value for r. */
static int row_of(const args *a, size_t r, od_plan_row *row)
{
    memset(row, 0, sizeof *row);
    row->workload = a->w;
    od_error err;
    const char *gpu_name = a->gpu_name;
    for (size_t i = 0; i < a->n_axes; i++) {
        const axis *x = &a->ax[i];
        const char *v = x->value[r % x->n];
        r /= x->n;
        row->value[i] = v;
        if (x->opt == O_GPU) {
            gpu_name = v;
            continue;
        }
        int rc = od_cli_workload_flag(CMD, x->opt, v, &row->workload);
        if (rc)
            return rc;
    }
    if (a->memory)
        od_gpu_custom(a->memory, &row->gpu);
    else if (od_gpu_lookup(gpu_name, &row->gpu, &err) != OD_OK)
        return od_cli_usage_error(CMD, "--gpu: %s", err.msg);
    row->workload.workspace_bytes = row->gpu.workspace_bytes;
    return od_cli_workload_done(CMD, &row->workload);
}

static void print_table(const loaded *ld, const args *a, const od_plan_row *rows, size_t n)
{
    char x[32], y[32], z[32], t[32], u[32];
    od_cli_color_init();
    const od_model *m = &ld->m;
    int vllm = rows[0].vllm != NULL;
    od_param_counts pc;
    od_model_count(m, &pc);
    printf("%smodel%s %s: %llu parameters, %llu layers, hidden %llu\n", od_c_bold, od_c_reset, m->model_type,
           (unsigned long long)(m->ckpt_params ? m->ckpt_params : pc.total), (unsigned long long)m->layers,
           (unsigned long long)m->hidden);
    for (size_t i = 0; i < a->n_axes; i++)
        printf("%-10s ", a->ax[i].name);
    if (vllm)
        printf("%12s %12s %9s %11s  fits\n", "weights", "KV cache", "blocks", "concurrency");
    else
        printf("%13s %12s %12s %12s %12s  fits  max batch\n", "largest layer", "model states", "peak", "device",
               "target");
    for (size_t r = 0; r < n; r++) {
        for (size_t i = 0; i < a->n_axes; i++)
            printf("%-10s ", rows[r].value[i]);
        if (vllm) {
            const od_vllm_plan *v = rows[r].vllm;
            printf("%12s %12s %9llu %10.2fx  %s%s%s\n", iec(v->weights_bytes, x), iec(v->kv_cache_bytes, y),
                   (unsigned long long)v->num_blocks, v->max_concurrency, v->fits ? od_c_green : od_c_red,
                   v->fits ? "yes" : "no", od_c_reset);
            continue;
        }
        const od_plan *p = rows[r].plan;
        const od_estimate *e = &p->estimate;
        printf("%13s %12s %12s %12s %12s  %s%-4s%s  %llu\n", iec(e->largest_layer_bytes, x),
               iec(e->model_states_bytes, y), iec(e->peak_allocated_bytes, z), iec(p->device_memory_bytes, t),
               iec(p->target_bytes, u), p->fits ? od_c_green : od_c_red, p->fits ? "yes" : "no", od_c_reset,
               (unsigned long long)p->max_batch);
    }
}

/* Plan every row; print the table (text or JSON). */
static int run_rows(const args *a, const loaded *ld, od_vllm_config *vc)
{
    size_t n = 1;
    for (size_t i = 0; i < a->n_axes; i++)
        n *= a->ax[i].n;
    if (n > MAX_ROWS)
        return od_cli_usage_error(CMD, "%zu combinations: at most %d rows", n, MAX_ROWS);
    od_plan_row *rows = calloc(n, sizeof *rows);
    od_plan *plans = a->vllm ? NULL : calloc(n, sizeof *plans);
    od_vllm_plan *vps = a->vllm ? calloc(n, sizeof *vps) : NULL;
    int rc = 0, all_fit = 1;
    od_error err;
    if (!rows || (!plans && !vps)) {
        od_fail(&err, OD_ERR_NOMEM, "out of memory");
        rc = od_cli_report_error(NULL, &err);
    }
    for (size_t r = 0; r < n && !rc; r++) {
        if ((rc = row_of(a, r, &rows[r])))
            break;
        if (a->vllm) {
            if (od_plan_vllm(&ld->m, &rows[r].workload, &rows[r].gpu, vc, &vps[r], &err) != OD_OK)
                rc = od_cli_usage_error(CMD, "%s", err.msg);
            rows[r].vllm = &vps[r];
            all_fit &= vps[r].fits;
        } else {
            if (od_plan_compute(&ld->m, &rows[r].workload, &rows[r].gpu, &plans[r], &err) != OD_OK)
                rc = od_cli_usage_error(CMD, "%s", err.msg);
            rows[r].plan = &plans[r];
            all_fit &= plans[r].fits;
        }
    }
    if (!rc && n == 1 && !a->n_axes) {
        const od_plan_row *r0 = &rows[0];
        if (a->json)
            rc = od_cli_print_json(a->vllm ? od_vllm_document(&ld->m, &r0->workload, &r0->gpu, vc, r0->vllm)
                                           : od_plan_document(&ld->m, &r0->workload, &r0->gpu, r0->plan,
                                                              ld->have_ck ? &ld->ck : NULL, ld->config_params));
        else if (a->vllm)
            print_vllm_text(&ld->m, &r0->workload, &r0->gpu, vc, r0->vllm);
        else
            print_text(ld, &r0->workload, &r0->gpu, r0->plan);
    } else if (!rc) {
        const char *names[OD_PLAN_MAX_AXES];
        for (size_t i = 0; i < a->n_axes; i++)
            names[i] = a->ax[i].name;
        if (a->json)
            rc = od_cli_print_json(od_plan_table_document(&ld->m, names, a->n_axes, rows, n));
        else
            print_table(ld, a, rows, n);
    }
    if (!rc && a->fail_if && !all_fit)
        rc = OD_EXIT_NOTHING;
    free(rows);
    free(plans);
    free(vps);
    return rc;
}

int od_cmd_plan(int argc, char **argv)
{
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) {
        free_axes(&a);
        return rc < 0 ? OD_EXIT_OK : rc;
    }
    loaded ld;
    if ((rc = load_model(&a, &ld))) {
        free_axes(&a);
        return rc;
    }
    /* vision and diffusion models: the config fixes the tokens of a sample; Whisper's
     * decoder reads at most max_target_positions */
    if (ld.m.image_tokens && !a.seq_given)
        a.w.seq = ld.m.image_tokens;
    if (ld.m.image_tokens && !a.prompt_given)
        a.w.prompt = ld.m.image_tokens;
    if (ld.m.encoder_tokens && ld.m.max_positions && !a.seq_given && a.w.seq > ld.m.max_positions)
        a.w.seq = ld.m.max_positions;
    od_vllm_config vc = a.vc;
    if (a.vllm && !vc.max_model_len)
        vc.max_model_len = ld.m.max_positions;
    if (a.vllm && !vc.max_model_len)
        rc = od_cli_usage_error(CMD, "the config gives no context length: give --max-model-len");
    if (!rc)
        rc = run_rows(&a, &ld, &vc);
    free(ld.gguf);
    free_axes(&a);
    return rc;
}
