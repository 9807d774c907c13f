/* Helpers for the tokenizer's tests (test_bpe, test_bounds_bpe,
 * test_tokenizer): the JSON text of a vocabulary holding the 256 byte
 * tokens (byte b has id b, spelled with GPT-2's byte-level character), so
 * that each test writes the files it needs byte by byte. */
#ifndef G2F_TEST_BPE_FILES_H
#define G2F_TEST_BPE_FILES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_bpe.h"

/* "{" the byte tokens (all but byte skip; -1: none), then extra, "}":
 * malloc'd, the caller frees (aborts when out of memory). */
static inline char *bpe_byte_vocab(const char *extra, int skip) {
    size_t cap = 8192 + strlen(extra), len = 0;
    char *j = malloc(cap);
    if (!j) abort();
    len += (size_t)snprintf(j, cap, "{");
    for (unsigned b = 0; b < 256; b++) {
        if ((int)b == skip) continue;
        uint32_t cp = g2f_bpe_byte_char((unsigned char)b);
        char sp[3] = {(char)cp, 0, 0};
        if (cp >= 0x80) sp[0] = (char)(0xC0 | cp >> 6), sp[1] = (char)(0x80 | (cp & 0x3F));
        len += (size_t)snprintf(j + len, cap - len, "%s\"%s%s\": %u", len > 1 ? ", " : "",
                                b == '"' || b == '\\' ? "\\" : "", sp, b);
    }
    snprintf(j + len, cap - len, "%s}", extra);
    return j;
}

#endif
