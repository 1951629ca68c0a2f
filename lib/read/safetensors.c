/* safetensors.c - safetensors headers -> exact parameter counts and weight bytes. */
#include "read/safetensors.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* Element sizes of the dtypes safetensors names (its Dtype enum). */
static int dtype_bytes(const char *d)
{
    static const struct { const char *name; int bytes; } T[] = {
        {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
        {"I16", 2}, {"U16", 2}, {"F16", 2}, {"BF16", 2}, {"I32", 4}, {"U32", 4},
        {"F32", 4}, {"I64", 8}, {"U64", 8}, {"F64", 8}};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (!strcmp(d, T[i].name))
            return T[i].bytes;
    return 0;
}

od_status od_safetensors_header_length(const uint8_t *prefix, uint64_t file_size,
                                       uint64_t *header_len, od_error *err)
{
    if (file_size < 8)
        return od_fail_at(err, OD_ERR_FORMAT, 0,
                          "a safetensors file starts with an 8-byte header length; this one "
                          "has %llu bytes", (unsigned long long)file_size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | prefix[i];
    if (n > OD_SAFETENSORS_MAX_HEADER)
        return od_fail_at(err, OD_ERR_LIMIT, 0,
                          "header length %llu is absurd (safetensors allows at most %u bytes): "
                          "not a safetensors file", (unsigned long long)n,
                          OD_SAFETENSORS_MAX_HEADER);
    if (n < 2 || n > file_size - 8)
        return od_fail_at(err, OD_ERR_FORMAT, 0,
                          "header length %llu does not fit the file's %llu bytes after the "
                          "length: truncated, or not a safetensors file",
                          (unsigned long long)n, (unsigned long long)(file_size - 8));
    *header_len = n;
    return OD_OK;
}

/* File offset of "key" in the header text (8 + its position), for error messages. */
static uint64_t key_offset(const char *json, size_t len, const char *key)
{
    size_t k = strlen(key);
    for (size_t i = 0; i + k + 2 <= len; i++)
        if (json[i] == '"' && !memcmp(json + i + 1, key, k) && json[i + k + 1] == '"')
            return 8 + i;
    return 8;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Quantization metadata: GPTQ/AWQ scales, zeros and group index; bitsandbytes absmax,
 * quant maps and quant_state blobs; LLM.int8's row scales. */
static int is_quant_meta(const char *name)
{
    static const char *const S[] = {".qzeros", ".scales", ".g_idx", ".absmax", ".quant_map",
                                    ".nested_absmax", ".nested_quant_map", ".SCB",
                                    ".weight_format"};
    for (size_t i = 0; i < sizeof S / sizeof S[0]; i++)
        if (ends_with(name, S[i]))
            return 1;
    return strstr(name, ".quant_state.") != NULL;
}

/* Whether the header has a tensor named base + suffix. */
static int has_sibling(json_t *root, const char *base, const char *suffix)
{
    char k[512];
    if ((size_t)snprintf(k, sizeof k, "%s%s", base, suffix) >= sizeof k)
        return 0;
    return json_object_get(root, k) != NULL;
}

#define FAIL(st, ...)                                                                      \
    do {                                                                                   \
        rc = od_fail_at(err, st, key_offset(json, len, name), __VA_ARGS__);                \
        goto out;                                                                          \
    } while (0)

od_status od_safetensors_add_header(const char *json, size_t len, uint64_t data_bytes,
                                    unsigned bits, od_safetensors_totals *tot, od_error *err)
{
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return od_fail_at(err, OD_ERR_FORMAT,
                          8 + (uint64_t)(jerr.position > 0 ? jerr.position - 1 : 0),
                          "safetensors header is not JSON: %s", jerr.text);
    od_status rc = OD_OK;
    const char *name = "";
    if (!json_is_object(root))
        FAIL(OD_ERR_FORMAT, "safetensors header is not a JSON object");
    if (bits == 0)
        bits = 4;
    if (bits > 32 || 32 % bits)
        return json_decref(root), od_fail(err, OD_ERR_ARG, "quantization bits %u do not pack an int32", bits);
    od_safetensors_totals t = *tot;
    uint64_t used = 0;
    json_t *v;
    json_object_foreach(root, name, v) {
        if (!strcmp(name, "__metadata__"))
            continue;
        if (!json_is_object(v))
            FAIL(OD_ERR_FORMAT, "tensor \"%.80s\" is not an object {dtype, shape, data_offsets}", name);
        json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
               *off = json_object_get(v, "data_offsets");
        int eb = json_is_string(dt) ? dtype_bytes(json_string_value(dt)) : 0;
        if (!eb)
            FAIL(OD_ERR_FORMAT, "tensor \"%.80s\": dtype %s is not a safetensors dtype", name,
                 json_is_string(dt) ? json_string_value(dt) : "missing");
        if (!json_is_array(sh) || json_array_size(sh) > 16)
            FAIL(OD_ERR_FORMAT, "tensor \"%.80s\": shape is not an array of at most 16 sizes", name);
        uint64_t numel = 1;
        for (size_t i = 0; i < json_array_size(sh); i++) {
            json_t *d = json_array_get(sh, i);
            json_int_t x = json_is_integer(d) ? json_integer_value(d) : -1;
            if (x < 0)
                FAIL(OD_ERR_FORMAT, "tensor \"%.80s\": shape[%zu] is not a non-negative integer", name, i);
            if (x && numel > UINT64_MAX / 8 / (uint64_t)x)
                FAIL(OD_ERR_LIMIT, "tensor \"%.80s\": shape is absurd", name);
            numel *= (uint64_t)x;
        }
        json_t *b0 = json_array_get(off, 0), *b1 = json_array_get(off, 1);
        if (!json_is_array(off) || json_array_size(off) != 2 || !json_is_integer(b0) ||
            !json_is_integer(b1) || json_integer_value(b0) < 0 ||
            json_integer_value(b1) < json_integer_value(b0))
            FAIL(OD_ERR_FORMAT, "tensor \"%.80s\": data_offsets is not [begin, end] with begin <= end", name);
        uint64_t begin = (uint64_t)json_integer_value(b0), end = (uint64_t)json_integer_value(b1);
        if (end > data_bytes)
            FAIL(OD_ERR_FORMAT, "tensor \"%.80s\": data_offsets end %llu is past the data (%llu bytes): truncated file",
                 name, (unsigned long long)end, (unsigned long long)data_bytes);
        uint64_t bytes = numel * (uint64_t)eb;
        if (end - begin != bytes)
            FAIL(OD_ERR_FORMAT, "tensor \"%.80s\": data_offsets span %llu bytes, its dtype and shape need %llu",
                 name, (unsigned long long)(end - begin), (unsigned long long)bytes);
        used += bytes;
        if (used > data_bytes)
            FAIL(OD_ERR_FORMAT, "tensor \"%.80s\": the tensors overlap (they take more than the %llu data bytes)",
                 name, (unsigned long long)data_bytes);
        const char *dts = json_string_value(dt);
        t.tensors++;
        t.weight_bytes += bytes;
        if (bytes > t.largest_tensor_bytes)
            t.largest_tensor_bytes = bytes;
        if (ends_with(name, ".qweight") && (!strcmp(dts, "I32") || !strcmp(dts, "U32"))) {
            t.params += numel * (32 / bits);
            t.packed_params += numel * (32 / bits);
            snprintf(t.quant, sizeof t.quant, "gptq/awq");
        } else if (is_quant_meta(name)) {
            t.quant_meta_bytes += bytes;
        } else if (!strcmp(dts, "U8") && (has_sibling(root, name, ".absmax") ||
                                          has_sibling(root, name, ".quant_state.bitsandbytes__nf4") ||
                                          has_sibling(root, name, ".quant_state.bitsandbytes__fp4"))) {
            t.params += numel * 2; /* bitsandbytes 4-bit: two values a byte */
            t.packed_params += numel * 2;
            snprintf(t.quant, sizeof t.quant, "bnb-nf4");
        } else {
            t.params += numel;
            if (!strcmp(dts, "I8") && ends_with(name, ".weight")) {
                char base[512];
                size_t bl = strlen(name) - strlen(".weight");
                if (bl < sizeof base) {
                    memcpy(base, name, bl);
                    base[bl] = 0;
                    if (has_sibling(root, base, ".SCB")) {
                        t.packed_params += numel;
                        if (!t.quant[0])
                            snprintf(t.quant, sizeof t.quant, "bnb-int8");
                    }
                }
            }
        }
    }
    t.files++;
    *tot = t;
out:
    json_decref(root);
    return rc;
}
