/* units.h - byte sizes as people write them and read them.
 * Text output uses IEC units (KiB, MiB, GiB: powers of 1024); JSON carries plain bytes. */
#ifndef OD_UNITS_H
#define OD_UNITS_H

#include "oomdoc/od.h"

/* Write bytes as "1.50 GiB" / "512 B" into buf (always NUL-terminated); returns buf. */
char *od_format_iec(uint64_t bytes, char *buf, size_t bufsize);

/* Parse a size: plain bytes ("1048576"), IEC ("2GiB", "1.5 MiB", "512KiB") or SI
 * ("40GB" = 40e9, "10 MB") suffixes; "B" alone is bytes. Case-insensitive units.
 * Fails with OD_ERR_ARG naming the text on anything else, negatives, or overflow. */
od_status od_parse_size(const char *text, uint64_t *out_bytes, od_error *err);

/* v rounded to the nearest integer, within +-9e18 (NaN gives 0): an absurd figure must
 * not overflow a cast to a byte count or a JSON integer. */
long long od_round_clamped(double v);

#endif
