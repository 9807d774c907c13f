/* Fuzz target: the zip reader (g2f_zip_open_mapping), then every member
 * through g2f_zip_stored_view / g2f_zip_extract (inflate, size, ratio, CRC). */
#include "fuzz_util.h"
#include "g2f_zip.h"

int g2f_fuzz_zip(const uint8_t *data, size_t size) {
    g2f_zip *z = NULL;
    g2f_error err = {0};
    g2f_status s = g2f_zip_open_mapping(data, size, "fuzz.zip", &z, &err);
    fuzz_check_message(s, &err);
    if (s != G2F_OK) return 0;
    size_t n = g2f_zip_count(z);
    for (size_t i = 0; i < n && i < 64; i++) {
        const g2f_zip_member *m = g2f_zip_entry(z, i);
        if (g2f_zip_find(z, m->name) != m) abort();
        const unsigned char *view;
        g2f_error e2 = {0};
        if (m->method == G2F_ZIP_STORED) {
            s = g2f_zip_stored_view(z, m, &view, &e2);
            fuzz_check_message(s, &e2);
        }
        unsigned char *buf = NULL;
        s = g2f_zip_extract(z, m, 64u << 20, &buf, &e2);
        fuzz_check_message(s, &e2);
        free(buf);
    }
    g2f_zip_close(z);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_zip(data, size); }
#endif
