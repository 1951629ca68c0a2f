/* gguf.h - llama.cpp's GGUF files, from their header alone: the metadata as a config the
 * families know, and every tensor's ggml type and size. The tensor data is never read.
 *
 * A GGUF file (ggml/docs/gguf.md; version 2 and 3) is "GGUF", a uint32 version, uint64
 * counts of tensors and metadata pairs, the pairs (a uint64-length string key, a uint32
 * type, the value; arrays as a type, a uint64 count and the elements), one info per tensor
 * (name, uint32 dims, uint64 sizes, uint32 ggml type, uint64 offset), then the aligned
 * data. od_gguf is a plain value: nothing to free. */
#ifndef OD_GGUF_H
#define OD_GGUF_H

#include "oomdoc/od.h"
#include "read/safetensors.h"

#define OD_GGUF_MAX_TYPES 40

typedef struct {
    uint64_t need_bytes;        /* > 0: the header runs past the bytes given; read this many
                                 * from the start and parse again (nothing else is filled) */
    uint32_t version;
    uint64_t n_tensors, n_metadata;
    uint64_t header_bytes;      /* where the tensor infos end */
    char architecture[32];      /* general.architecture ("llama", "qwen2", ...) */
    char name[96];              /* general.name, "" when absent */
    char config[2048];          /* the metadata as config.json text for od_hfconfig_parse */
    od_safetensors_totals totals; /* files 1, tensors, params, weight_bytes (what loading
                                 * takes), packed_params (in quantized types), quant = the
                                 * most common quantized type ("Q4_K"), format "gguf" */
    size_t n_types;
    struct { const char *type; uint64_t tensors, params, bytes; } types[OD_GGUF_MAX_TYPES];
} od_gguf;

/* Parse the header in buf[0 .. len) of a file of file_size bytes. OD_OK: *out filled, or
 * out->need_bytes set when the header goes on past len. Fails with OD_ERR_FORMAT at the
 * byte offset (no GGUF magic, an unknown version or value type, a header past the end of
 * the file, a tensor whose offset and size fall outside the data, a type ggml does not
 * have, an architecture without the sizes a model needs) or OD_ERR_LIMIT (absurd counts). */
od_status od_gguf_parse(const uint8_t *buf, size_t len, uint64_t file_size, od_gguf *out, od_error *err);

/* The name of ggml type t ("Q4_K"), or NULL for a type ggml does not have. */
const char *od_gguf_type_name(uint32_t t);

#endif
