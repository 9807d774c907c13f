/* g2f_text: strings from files, made safe to show on a terminal.
 *
 * Names, metadata values, config strings and paths come from files a
 * stranger wrote. Printed as they are, a newline forges a report line
 * ("result: PASS"), an ESC sequence drives the user's terminal (clears it,
 * sets its title, moves the cursor), a BEL rings, and bytes that are not
 * UTF-8 garble what follows. Every file-derived string that reaches stdout
 * or stderr goes through g2f_escape, which shows such bytes as text:
 *
 *   C0 controls 0x00-0x1F (newline, tab, ESC, BEL, ...) and DEL 0x7F:
 *       \xHH, lowercase hex ("\x0a", "\x1b");
 *   C1 controls U+0080-U+009F (a UTF-8 "\xc2\x9b" is CSI on some
 *       terminals) and the bidirectional controls U+061C, U+200E, U+200F,
 *       U+202A-U+202E, U+2066-U+2069 (they reorder what the user reads):
 *       each of their UTF-8 bytes as \xHH ("\xe2\x80\xae");
 *   a byte that does not start a valid UTF-8 sequence (overlong forms,
 *       surrogates, above U+10FFFF, truncated): \xHH;
 *   everything else, including every other valid UTF-8 character and the
 *       backslash itself, unchanged: a readable name stays readable.
 * The result is one line of valid UTF-8 without control characters.
 *
 * JSON and HTML escape by their own syntax (g2f_report, g2f_html) and use
 * g2f_utf8_len and g2f_text_is_plain from here.
 */
#ifndef G2F_TEXT_H
#define G2F_TEXT_H

#include <stddef.h>

/* Length (1-4) of the valid UTF-8 sequence at s, 0 when s does not start
 * one. s is NUL-terminated: a NUL ends any sequence, so nothing past it is
 * read. *s == 0 returns 1 (the NUL itself). */
size_t g2f_utf8_len(const unsigned char *s);

/* 1 when s needs no escaping (g2f_escape would copy it unchanged). */
int g2f_text_is_plain(const char *s);

/* Writes s escaped as above into dst (cap >= 1 bytes, always
 * NUL-terminated). When dst is too small the output ends early, never in the
 * middle of an escape or of a UTF-8 character. NULL s writes "". Returns
 * dst. */
char *g2f_escape(const char *s, char *dst, size_t cap);

/* Bytes g2f_escape needs for all of s, including the NUL. */
size_t g2f_escape_size(const char *s);

/* s escaped into a malloc'd string the caller frees; NULL when out of
 * memory. */
char *g2f_escape_dup(const char *s);

/* A malloc'd copy of s in which every byte that does not start a valid
 * UTF-8 sequence is replaced by U+FFFD, and nothing else changes (for text
 * that must be UTF-8, such as a safetensors header); NULL when out of
 * memory. */
char *g2f_utf8_repair_dup(const char *s);

/* Text that must be UTF-8 and may hold anything (a prompt, NUL bytes
 * included): in[0, len) decoded as WHATWG's TextDecoder and Python's
 * bytes.decode("utf-8", "replace") do, each *maximal subpart* of an invalid
 * sequence replaced by one U+FFFD (Unicode's "best practice", chapter 3):
 * a lead byte and the continuation bytes that could still complete it are
 * one replacement ("\xe2\x82" then "x": one U+FFFD, then "x"); a byte that
 * can start nothing (0x80-0xC1, 0xF5-0xFF, a continuation out of place) is
 * one replacement of its own; overlong forms, surrogates (ED A0-BF) and
 * code points above U+10FFFF fail at their second byte. A leading BOM
 * (EF BB BF) is kept as U+FEFF, as Python keeps it. Writes the result into
 * out when out is not NULL (3 x len bytes always suffice) and returns its
 * length; *replaced (when not NULL) gets the number of U+FFFD written for
 * invalid input. Valid UTF-8 is copied unchanged. */
size_t g2f_utf8_replace(const unsigned char *in, size_t len, unsigned char *out, size_t *replaced);

#endif
