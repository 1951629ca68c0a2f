/* pprof.h - a focused reader for the pprof Profile protobuf (profile.proto), enough for
 * memory profiles: sample types, samples (locations, values, labels), locations with
 * their lines, functions and the string table. Mappings and the rest are skipped.
 *
 * The input is the decompressed message, held in memory (JAX device memory profiles are
 * small). od_pprof_parse returns a profile the caller frees with od_pprof_free (NULL is
 * fine); strings point into the profile's own copy of the input. */
#ifndef OD_PPROF_H
#define OD_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "oomdoc/od.h"

typedef struct {
    int64_t key, str, num;   /* string-table indexes (key, str) and a numeric value */
} od_pprof_label;

typedef struct {
    uint64_t *location_ids;  /* innermost first, as pprof stores them */
    size_t n_locations;
    int64_t *values;         /* one per sample type */
    size_t n_values;
    od_pprof_label *labels;
    size_t n_labels;
} od_pprof_sample;

typedef struct {
    uint64_t function_id;
    int64_t line;
} od_pprof_line;

typedef struct {
    uint64_t id;
    od_pprof_line *lines;    /* inlined calls: the last is the caller */
    size_t n_lines;
} od_pprof_location;

typedef struct {
    uint64_t id;
    int64_t name, filename, start_line;  /* name and filename: string-table indexes */
} od_pprof_function;

typedef struct {
    int64_t type, unit;      /* string-table indexes */
} od_pprof_value_type;

typedef struct {
    char *data;              /* the copied input; strings below point into it */
    const char **strings;    /* NUL-terminated copies in strings_buf */
    char *strings_buf;
    size_t n_strings;
    od_pprof_value_type *sample_types;
    size_t n_sample_types;
    od_pprof_sample *samples;
    size_t n_samples;
    od_pprof_location *locations;
    size_t n_locations;
    od_pprof_function *functions;
    size_t n_functions;
} od_pprof;

/* Parse the message data[0..len). Fails with OD_ERR_FORMAT and the byte offset on a
 * malformed or truncated message, OD_ERR_NOMEM. Indexes are checked by the accessors. */
od_status od_pprof_parse(const void *data, size_t len, od_pprof **out, od_error *err);
void od_pprof_free(od_pprof *p);

/* The string at index i, or "" when i is out of range. */
const char *od_pprof_string(const od_pprof *p, int64_t i);
/* The location / function with that id, or NULL. */
const od_pprof_location *od_pprof_location_by_id(const od_pprof *p, uint64_t id);
const od_pprof_function *od_pprof_function_by_id(const od_pprof *p, uint64_t id);

#endif
