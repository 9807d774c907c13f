/* g2f_text: see g2f_text.h. One decoder (g2f_utf8_len) and one rule (what
 * is shown as \xHH); the escaping walks the string once per call. */
#include "g2f_text.h"

#include <stdlib.h>
#include <string.h>

/* How many continuation bytes lead byte c needs (0: c starts nothing but
 * itself, ASCII or invalid) and the range its first one must lie in, which
 * is where overlongs, surrogates and code points past U+10FFFF fail. */
static int lead_needs(unsigned char c, unsigned char *lo, unsigned char *hi) {
    *lo = 0x80;
    *hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) return 1;
    if (c >= 0xE0 && c <= 0xEF) {
        if (c == 0xE0) *lo = 0xA0;
        if (c == 0xED) *hi = 0x9F;
        return 2;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (c == 0xF0) *lo = 0x90;
        if (c == 0xF4) *hi = 0x8F;
        return 3;
    }
    return 0;
}

size_t g2f_utf8_len(const unsigned char *s) {
    unsigned char lo, hi;
    if (s[0] < 0x80) return 1;
    int need = lead_needs(s[0], &lo, &hi);
    if (need == 0) return 0;
    for (int k = 1; k <= need; k++, lo = 0x80, hi = 0xBF) /* a NUL is below lo: nothing past it is read */
        if (s[k] < lo || s[k] > hi) return 0;
    return (size_t)need + 1;
}

/* The unit at p: *len bytes, shown escaped (1) or as they are (0). */
static int unit(const unsigned char *p, size_t *len) {
    size_t k = g2f_utf8_len(p);
    if (k == 0) {
        *len = 1;
        return 1; /* not UTF-8 */
    }
    *len = k;
    if (k == 1) return *p < 0x20 || *p == 0x7F;
    if (k == 2) return (p[0] == 0xC2 && p[1] <= 0x9F) || (p[0] == 0xD8 && p[1] == 0x9C); /* C1; U+061C */
    if (k == 3) {
        unsigned cp = (unsigned)(p[0] & 0x0F) << 12 | (unsigned)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
        return cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
    }
    return 0;
}

int g2f_text_is_plain(const char *s) {
    if (!s) return 1;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n;
        if (unit(p, &n)) return 0;
        p += n;
    }
    return 1;
}

size_t g2f_escape_size(const char *s) {
    size_t need = 1;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        size_t n;
        need += unit(p, &n) ? 4 * n : n;
        p += n;
    }
    return need;
}

char *g2f_escape(const char *s, char *dst, size_t cap) {
    static const char hex[] = "0123456789abcdef";
    size_t used = 0;
    if (cap == 0) return dst;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        size_t n;
        int esc = unit(p, &n);
        size_t out = esc ? 4 * n : n;
        if (used + out >= cap) break; /* whole units only */
        if (esc) {
            for (size_t i = 0; i < n; i++) {
                dst[used++] = '\\';
                dst[used++] = 'x';
                dst[used++] = hex[p[i] >> 4];
                dst[used++] = hex[p[i] & 15];
            }
        } else {
            memcpy(dst + used, p, n);
            used += n;
        }
        p += n;
    }
    dst[used] = '\0';
    return dst;
}

char *g2f_escape_dup(const char *s) {
    size_t n = g2f_escape_size(s);
    char *d = malloc(n);
    return d ? g2f_escape(s, d, n) : NULL;
}

char *g2f_utf8_repair_dup(const char *s) {
    size_t n = 1;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t k = g2f_utf8_len(p);
        n += k ? k : 3;
        p += k ? k : 1;
    }
    char *d = malloc(n), *o = d;
    if (!d) return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t k = g2f_utf8_len(p);
        if (k) memcpy(o, p, k), o += k, p += k;
        else memcpy(o, "\xEF\xBF\xBD", 3), o += 3, p++;
    }
    *o = '\0';
    return d;
}

size_t g2f_utf8_replace(const unsigned char *in, size_t len, unsigned char *out, size_t *replaced) {
    size_t o = 0, bad = 0, i = 0;
    while (i < len) {
        unsigned char lo = 0x80, hi = 0xBF, c = in[i];
        int need = c < 0x80 ? 0 : lead_needs(c, &lo, &hi);
        size_t j = i + 1;
        int ok = c < 0x80 || need > 0;
        /* a byte that cannot continue the sequence is not consumed: it starts the next unit */
        for (int k = 0; ok && k < need; k++) {
            ok = j < len && in[j] >= lo && in[j] <= hi;
            if (ok) j++;
            lo = 0x80;
            hi = 0xBF;
        }
        if (ok) {
            if (out) memcpy(out + o, in + i, j - i);
            o += j - i;
        } else {
            if (out) memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            bad++;
        }
        i = j;
    }
    if (replaced) *replaced = bad;
    return o;
}
