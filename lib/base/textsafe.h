/* textsafe.h - strings from the outside (frame names from a pickle, paths, names from a
 * config or from NVML) made safe to show: escaped for a terminal, cut without breaking a
 * UTF-8 character, made valid UTF-8 for JSON, paths shortened for a reader, and a line of
 * text wrapped to a width.
 *
 * Nothing here allocates: every function writes into the caller's buffer (always
 * NUL-terminated when size > 0) and returns the length the whole result needs, as
 * snprintf does, so a caller can tell that it was cut and retry with more room. A cut
 * result ends at a character or escape boundary, never inside one. */
#ifndef OD_TEXTSAFE_H
#define OD_TEXTSAFE_H

#include <stddef.h>
#include <stdint.h>

/* The byte length (1..4) of the valid UTF-8 character at s[0..len), with its code point
 * in *cp; 0 when the bytes there are not one (a stray continuation byte, an overlong or
 * surrogate form, a sequence cut short, a code point above U+10FFFF). */
size_t od_utf8_decode(const char *s, size_t len, uint32_t *cp);

/* 1 when s[0..len) is valid UTF-8, else 0. */
int od_utf8_valid(const char *s, size_t len);

/* The largest n <= max such that s[0..n) does not end inside a UTF-8 character (for
 * snprintf-style cuts: a buffer of size B holds od_utf8_cut(s, len, B - 1) bytes).
 * Invalid bytes count as characters of their own. */
size_t od_utf8_cut(const char *s, size_t len, size_t max);

/* len less the UTF-8 character that s[0..len) ends inside of, if it does (the bytes an
 * snprintf cut of valid UTF-8 leaves of the last character): what to keep of a cut. */
size_t od_utf8_trim(const char *s, size_t len);

/* s[0..len) with every byte that is not part of valid UTF-8 replaced by U+FFFD, into
 * buf: what JSON may carry. Returns the length needed. */
size_t od_utf8_sanitize(const char *s, size_t len, char *buf, size_t size);

/* Escaping for a terminal: every byte of s[0..len) a terminal would act on is shown as
 * text. ESC is \e; newline, tab, carriage return \n \t \r; other C0 controls and DEL \xHH;
 * C1 controls (U+0080..U+009F) and the bidirectional overrides and isolates
 * (U+202A..U+202E, U+2066..U+2069, which reorder what follows them) \u{HHHH}; a byte
 * that is not valid UTF-8 \xHH. Valid printable UTF-8 is kept as it is.
 * OD_ESC_BACKSLASH: a backslash is \\ too, so the escaped text reads back unambiguously
 * (one-line error messages); without it a Windows path keeps its backslashes. */
#define OD_ESC_BACKSLASH 1u
size_t od_text_escape(const char *s, size_t len, unsigned flags, char *buf, size_t size);

/* 1 when od_text_escape would change nothing in s[0..len) (flags as there). */
int od_text_is_safe(const char *s, size_t len, unsigned flags);

/* The columns a terminal gives the code point cp: 0 for combining marks and zero-width
 * characters, 2 for East Asian wide and fullwidth forms and emoji, else 1. */
int od_char_width(uint32_t cp);

/* The columns s[0..len) takes on a terminal: SGR sequences (ESC [ ... m, colour) take
 * none, an invalid byte one. */
size_t od_text_width(const char *s, size_t len);

/* A path shortened for a reader: the part after the last "site-packages/" or
 * "dist-packages/" (the package's own path: "transformers/models/llama/modeling_llama.py"),
 * else the part after "cwd/" when the path lies under cwd (relative to the working
 * directory), else the path itself. A pointer into path (a suffix of it); cwd NULL or ""
 * skips the second rule. */
const char *od_path_short(const char *path, const char *cwd);

/* Free text with every path in it shortened as od_path_short does: a path starts at the
 * start of the text or after a space, '(', '[', '\'', '"', '=' or ','. Returns the length
 * needed. */
size_t od_text_shorten_paths(const char *text, size_t len, const char *cwd, char *buf, size_t size);

/* Wrap one line (no newline in it) of s[0..len) at width columns: breaks at spaces, a
 * word longer than a line after a '/', else where it must; continuation lines are
 * indented under the first word after the line's indent and list marker ("- ", "* ",
 * "1. ", "2) "), or under the last field of a table row (the text after the last run of
 * two or more spaces before the first break), whichever is further; two columns in from
 * the line's own indent when it has neither; always leaving 30 columns (half the width
 * under 60) for the text. Lines joined by '\n' into buf, without a final one. A line that fits, a width
 * under 20, or a line with a control character or an escape other than SGR (cursor
 * movement, a carriage return: text drawn in place) is copied unchanged. Returns the
 * length needed. */
size_t od_text_wrap(const char *s, size_t len, size_t width, char *buf, size_t size);

#endif
