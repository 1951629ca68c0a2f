/* safetensors.h - exact parameter counts and weight bytes from a checkpoint's
 * safetensors headers, without reading a weight.
 *
 * A .safetensors file is an 8-byte little-endian header length N, N bytes of JSON
 * ({name: {dtype, shape, data_offsets}} plus an optional "__metadata__"), then the data.
 * The caller reads the first 8 bytes and the header; these functions check and sum
 * them into an od_safetensors_totals (a plain value; nothing to free). Shards of one
 * checkpoint are summed by calling od_safetensors_add_header once per shard. */
#ifndef OD_SAFETENSORS_H
#define OD_SAFETENSORS_H

#include "oomdoc/od.h"

/* The reference implementation's own limit on a header (safetensors' MAX_HEADER_SIZE). */
#define OD_SAFETENSORS_MAX_HEADER (100u * 1000u * 1000u)

typedef struct {
    uint64_t files;             /* headers summed */
    uint64_t tensors;
    uint64_t params;            /* logical parameters: a packed 4-bit qweight (GPTQ/AWQ,
                                 * int32 holding 32/bits values) or a bitsandbytes 4-bit
                                 * uint8 weight (two per byte) counted unpacked;
                                 * quantization metadata not counted */
    uint64_t weight_bytes;      /* data bytes of every tensor: what loading takes */
    uint64_t quant_meta_bytes;  /* of which scales, zeros, g_idx, absmax, quant maps */
    uint64_t packed_params;     /* logical parameters held packed (0: not quantized) */
    uint64_t largest_tensor_bytes;
    char quant[16];             /* "" (none), "gptq/awq", "bnb-nf4", "bnb-int8", "gguf" */
    char format[16];            /* "" (safetensors) or "gguf" */
} od_safetensors_totals;

/* Check a file's first 8 bytes (prefix) against its size: fills *header_len. Fails with
 * OD_ERR_FORMAT (file shorter than 8 bytes, or than the header it announces) or
 * OD_ERR_LIMIT (a header over OD_SAFETENSORS_MAX_HEADER), at byte offset 0. */
od_status od_safetensors_header_length(const uint8_t *prefix, uint64_t file_size,
                                       uint64_t *header_len, od_error *err);

/* Add one header (len bytes of JSON; data_bytes = file size - 8 - len) to *tot. bits is
 * the packed width of GPTQ/AWQ qweights (the config's quantization_config.bits; 0 = 4).
 * Fails with OD_ERR_FORMAT naming the tensor and its byte offset in the file (unknown
 * dtype, negative or mistyped shape, offsets outside the data or not matching dtype x
 * shape, spans adding up to more than the data); *tot is unchanged on failure. */
od_status od_safetensors_add_header(const char *json, size_t len, uint64_t data_bytes,
                                    unsigned bits, od_safetensors_totals *tot, od_error *err);

#endif
