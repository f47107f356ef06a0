/* UTF-8 as the tokenizers see it: `tokenizers` works on valid strings only,
 * so bytes that are not valid UTF-8 become U+FFFD first, exactly as Python's
 * bytes.decode("utf-8", errors="replace") and Rust's from_utf8_lossy do
 * (one U+FFFD per maximal ill-formed subpart, Unicode 3.9). */
#ifndef ND_TEXT_UTF8_H
#define ND_TEXT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 when the bytes
 * there do not start one. */
size_t nd__utf8_valid_len(const unsigned char *s, size_t n);

/* Appends s (n bytes) to *out (*len bytes, room for *cap, malloc'd), each
 * maximal ill-formed subpart replaced by U+FFFD. -1 when out of memory. */
int nd__utf8_clean(const char *s, size_t n, char **out, size_t *len, size_t *cap);

/* Byte length of the character starting with byte c (1 for a stray byte):
 * for walking text already known to be valid. */
static inline size_t nd__utf8_char_len(unsigned char c) { return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

/* Encodes code point cp at out (room for 4); returns its length. */
size_t nd__utf8_put(uint32_t cp, char *out);

/* GPT-2's byte-level alphabet: the character that stands for byte b (the
 * printable Latin-1 bytes stand for themselves, the others for 256, 257, ...
 * in order), so that every byte is a printable character of the vocabulary. */
uint32_t nd__byte_level_char(unsigned char b);

/* Makes room for extra more bytes in *buf (*len used, *cap allocated). */
int nd__grow(char **buf, size_t len, size_t extra, size_t *cap);

#endif
