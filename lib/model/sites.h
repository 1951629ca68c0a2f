/* sites.h - which source line an allocation belongs to.
 *
 * A stack's "site" is its innermost frame in the user's own code (not the Python
 * standard library, not an installed package under site-packages/dist-packages, not
 * <frozen ...> or other <...> pseudo-files); its "where" is the innermost frame outside
 * torch itself (e.g. the transformers layer that called torch). Both are shown as
 * "file:line:function". Strings written by these functions are the caller's. */
#ifndef OD_SITES_H
#define OD_SITES_H

#include "oomdoc/snapshot.h"

typedef enum {
    OD_FRAME_USER,     /* the user's own code */
    OD_FRAME_STDLIB,   /* .../lib/pythonX.Y/... outside site-packages */
    OD_FRAME_PACKAGE,  /* an installed package (site-packages, dist-packages) */
    OD_FRAME_TORCH,    /* torch itself (an installed package too) */
    OD_FRAME_SPECIAL   /* <frozen importlib._bootstrap>, <string>, ... */
} od_frame_kind;

/* Bucket names for allocations without a site. */
#define OD_SITE_NO_FRAMES "<no python frames>"
#define OD_SITE_BEFORE_TRACE "<before trace>"

od_frame_kind od_frame_classify(const char *filename);

/* Frame indices (into snap->frames) of a stack's site and where; -1 when the stack is
 * empty. "where" skips torch, the standard library and pseudo-files; with no user frame
 * the site falls back to the where frame, and both to the innermost frame. */
void od_stack_site(const od_snapshot *snap, uint32_t stack, int64_t *site_frame, int64_t *where_frame);

/* Whether a stack was made while building or loading a model: a frame (outside any module
 * forward) named __init__, _apply/.to()/.cuda(), from_pretrained, load_state_dict or a
 * weight initializer. What a model allocates there is its parameters and buffers. */
int od_stack_is_init(const od_snapshot *snap, uint32_t stack);

/* The nesting of module forwards a stack ran through, outermost first, as
 * "modeling_llama.py:538 > modeling_llama.py:339 > modeling_llama.py:254" (each module's
 * forward frame outside torch, by file name and line): the module path as far as frames
 * tell it (they carry no attribute names such as layers.17.mlp). "" without forwards.
 * Returns buf. */
char *od_stack_module_path(const od_snapshot *snap, uint32_t stack, char *buf, size_t size);

/* Bytes by a name (a site, a module path): rows sharing a name are one entry. */
typedef struct {
    char name[256];
    uint64_t bytes;
} od_named_bytes;

/* Merge the rows of equal names (summing their bytes) and put the k largest first,
 * largest first (ties: by name). Returns how many of them there are (at most k); rows is
 * reordered. */
size_t od_named_bytes_top(od_named_bytes *rows, size_t n, size_t k);

/* Format frame i as "file:line:function" into buf; returns buf. One too long for buf keeps
 * its line, at most half of buf for the function and the end of the file's name after
 * "...", each cut at a UTF-8 character boundary (a buffer under 128 bytes: a plain cut at a
 * boundary). */
char *od_frame_format(const od_snapshot *snap, int64_t frame, char *buf, size_t size);

#endif
