/* Fuzz target: fixture tensor-name matching (g2f_fixture_open / _check /
 * _layer_load / _check_block / _check_model). Each input line is one tensor: its first
 * byte picks the shape (below: the FFN's and the block's, qkv, heads,
 * probs), the rest is the name. The lines become a valid safetensors file
 * of zero-filled F32 tensors, opened as a fixture and checked against the
 * tiny model's sizes (4 layers, n_embd 64, n_inner 256, 4 heads). */
#include "fuzz_util.h"
#include "g2f_fixture.h"

#define FX_MAX_TENSORS 64
#define FX_MAX_NAME 256

/* JSON string body of name[0, n), escaped; returns the bytes written. */
static size_t fx_escape(char *dst, const uint8_t *name, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = name[i];
        if (c == '"' || c == '\\') {
            dst[o++] = '\\';
            dst[o++] = (char)c;
        } else if (c < 0x20) {
            o += (size_t)sprintf(dst + o, "\\u%04x", c);
        } else {
            dst[o++] = (char)c;
        }
    }
    return o;
}

int g2f_fuzz_fixture_names(const uint8_t *data, size_t size) {
    static const uint64_t shapes[8][3] = {{2, 64, 0},  {2, 256, 0}, {3, 64, 0},  {1, 63, 0},
                                          {2, 192, 0}, {2, 4, 16},  {4, 2, 2},   {2, 2, 64}};
    char dir[400], path[512];
    if (fuzz_target_dir(dir, sizeof dir, "fixture_names")) return 0;
    snprintf(path, sizeof path, "%s/fixture.safetensors", dir);
    size_t cap = 64 + FX_MAX_TENSORS * (FX_MAX_NAME * 6 + 160);
    char *hdr = malloc(cap);
    if (!hdr) return 0;
    size_t len = (size_t)sprintf(hdr, "{");
    uint64_t off = 0;
    size_t n = 0, pos = 0;
    while (pos < size && n < FX_MAX_TENSORS) {
        size_t end = pos;
        while (end < size && data[end] != '\n') end++;
        if (end > pos) {
            unsigned sh = data[pos] & 7u;
            size_t nl = end - pos - 1;
            if (nl > FX_MAX_NAME) nl = FX_MAX_NAME;
            uint64_t bytes = shapes[sh][0] * shapes[sh][1] * (shapes[sh][2] ? shapes[sh][2] : 1) * 4;
            char dims[64];
            if (shapes[sh][2])
                snprintf(dims, sizeof dims, "%llu,%llu,%llu", (unsigned long long)shapes[sh][0],
                         (unsigned long long)shapes[sh][1], (unsigned long long)shapes[sh][2]);
            else
                snprintf(dims, sizeof dims, "%llu,%llu", (unsigned long long)shapes[sh][0],
                         (unsigned long long)shapes[sh][1]);
            len += (size_t)sprintf(hdr + len, "%s\"", n ? "," : "");
            len += fx_escape(hdr + len, data + pos + 1, nl);
            len += (size_t)sprintf(hdr + len, "\":{\"dtype\":\"F32\",\"shape\":[%s],\"data_offsets\":[%llu,%llu]}",
                                   dims, (unsigned long long)off, (unsigned long long)(off + bytes));
            off += bytes;
            n++;
        }
        pos = end + 1;
    }
    len += (size_t)sprintf(hdr + len, "}");
    while (len % 8) hdr[len++] = ' ';
    FILE *fp = fopen(path, "wb");
    if (!fp) {
        free(hdr);
        return 0;
    }
    unsigned char lb[8];
    for (int i = 0; i < 8; i++) lb[i] = (unsigned char)((uint64_t)len >> (8 * i));
    fwrite(lb, 1, 8, fp);
    fwrite(hdr, 1, len, fp);
    free(hdr);
    static const unsigned char zeros[4096];
    for (uint64_t w = 0; w < off; w += sizeof zeros)
        fwrite(zeros, 1, off - w < sizeof zeros ? (size_t)(off - w) : sizeof zeros, fp);
    if (fclose(fp)) return 0;

    g2f_fixture *f = NULL;
    g2f_error err = {0};
    g2f_status s = g2f_fixture_open(path, &f, &err);
    fuzz_check_message(s, &err);
    if (s == G2F_OK) {
        char name[128];
        for (size_t L = 0; L < 4; L++)
            for (int k = 0; k < 4; k++) g2f_fixture_name_for(f, L, g2f_ffn_act(k), name, sizeof name);
        s = g2f_fixture_check_inputs(f, 4, 64, &err);
        fuzz_check_message(s, &err);
        s = g2f_fixture_check(f, 4, 64, 256, &err);
        fuzz_check_message(s, &err);
        g2f_status sb = g2f_fixture_check_block(f, 4, 64, 4, &err);
        fuzz_check_message(sb, &err);
        size_t mns, mT; /* the model's ends: input_ids, embed, ln_f.out, logits (vocab 96, 32 positions) */
        g2f_status sm = g2f_fixture_check_model(f, 64, 96, 32, &mns, &mT, &err);
        fuzz_check_message(sm, &err);
        for (size_t L = 0; sb == G2F_OK && L < 4; L++) {
            size_t ns, T;
            if (g2f_fixture_has_block(f, L)) g2f_fixture_block_shape(f, L, &ns, &T);
        }
        if (s == G2F_OK) {
            for (size_t L = 0; L < 4; L++) {
                if (!g2f_fixture_has_layer(f, L)) continue;
                g2f_fixture_layer fl;
                s = g2f_fixture_layer_load(f, L, 64, 256, &fl, &err);
                fuzz_check_message(s, &err);
                if (s == G2F_OK) g2f_fixture_layer_free(&fl);
            }
        }
    }
    g2f_fixture_close(f);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_fixture_names(data, size); }
#endif
