/* Offsets past 4 GiB: a sparse safetensors file of about 4.5 GiB whose FFN
 * tensors sit after a 4.5 GiB filler tensor (never written, so it takes no
 * disk space), opened through g2f_source_open and g2f_model_open and read
 * back value by value. Catches any 32-bit offset or size on the read path.
 * Exits 77 (skipped) when the filesystem has less than 1 GiB free or does
 * not keep the file sparse. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "check.h"
#include "g2f_model.h"
#include "g2f_source.h"
#include "test_util.h"

#define E 4
#define I 16
#define FILLER ((uint64_t)9 << 29) /* 4.5 GiB of U8 */

static char path[512];
static float fc_w[E * I], fc_b[I], proj_w[I * E], proj_b[E];
static uint64_t data_start; /* file offset of the data buffer */

/* Writes the header and the FFN tensors after the filler; returns 0, or 77
 * when the filesystem cannot hold a sparse file, or -1. */
static int write_sparse(const char *dir) {
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    struct statvfs vfs;
    if (statvfs(dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < (1ull << 30)) {
        fprintf(stderr, "skip: less than 1 GiB free in %s\n", dir);
        return 77;
    }
    for (int i = 0; i < E * I; i++) fc_w[i] = 0.25f * (float)i - 3.0f;
    for (int i = 0; i < I; i++) fc_b[i] = (float)i / 7.0f;
    for (int i = 0; i < I * E; i++) proj_w[i] = 1.0f / (float)(i + 1);
    for (int i = 0; i < E; i++) proj_b[i] = -(float)i;
    char hdr[2048];
    uint64_t o0 = FILLER, o1 = o0 + sizeof fc_w, o2 = o1 + sizeof fc_b, o3 = o2 + sizeof proj_w,
             o4 = o3 + sizeof proj_b;
    int n = snprintf(hdr, sizeof hdr,
                     "{\"filler\":{\"dtype\":\"U8\",\"shape\":[%llu],\"data_offsets\":[0,%llu]},"
                     "\"h.0.mlp.c_fc.weight\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[%llu,%llu]},"
                     "\"h.0.mlp.c_fc.bias\":{\"dtype\":\"F32\",\"shape\":[%d],\"data_offsets\":[%llu,%llu]},"
                     "\"h.0.mlp.c_proj.weight\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[%llu,%llu]},"
                     "\"h.0.mlp.c_proj.bias\":{\"dtype\":\"F32\",\"shape\":[%d],\"data_offsets\":[%llu,%llu]}}",
                     (unsigned long long)FILLER, (unsigned long long)FILLER, E, I, (unsigned long long)o0,
                     (unsigned long long)o1, I, (unsigned long long)o1, (unsigned long long)o2, I, E,
                     (unsigned long long)o2, (unsigned long long)o3, E, (unsigned long long)o3,
                     (unsigned long long)o4);
    while (n % 8) hdr[n++] = ' ';
    data_start = 8 + (uint64_t)n;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return -1;
    unsigned char lb[8];
    for (int i = 0; i < 8; i++) lb[i] = (unsigned char)((uint64_t)n >> (8 * i));
    int ok = write(fd, lb, 8) == 8 && write(fd, hdr, (size_t)n) == n;
    if (ok && ftruncate(fd, (off_t)(data_start + o4)) != 0) {
        fprintf(stderr, "skip: ftruncate to %llu bytes refused\n", (unsigned long long)(data_start + o4));
        close(fd);
        unlink(path);
        return 77;
    }
    ok = ok && pwrite(fd, fc_w, sizeof fc_w, (off_t)(data_start + o0)) == (ssize_t)sizeof fc_w &&
         pwrite(fd, fc_b, sizeof fc_b, (off_t)(data_start + o1)) == (ssize_t)sizeof fc_b &&
         pwrite(fd, proj_w, sizeof proj_w, (off_t)(data_start + o2)) == (ssize_t)sizeof proj_w &&
         pwrite(fd, proj_b, sizeof proj_b, (off_t)(data_start + o3)) == (ssize_t)sizeof proj_b;
    struct stat st;
    ok = ok && fstat(fd, &st) == 0;
    close(fd);
    if (!ok) return -1;
    if ((uint64_t)st.st_blocks * 512 > (64u << 20)) {
        fprintf(stderr, "skip: the filesystem does not keep %s sparse\n", path);
        unlink(path);
        return 77;
    }
    return 0;
}

static void source_should_read_tensors_past_4gib(void) {
    g2f_source *s = NULL;
    g2f_error err = {0};
    CHECK(g2f_source_open(path, &s, &err) == G2F_OK);
    if (!s) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    const g2f_table *t = g2f_source_table(s);
    const g2f_tensor *filler = g2f_table_find(t, "filler"), *w = g2f_table_find(t, "h.0.mlp.c_fc.weight"),
                     *b = g2f_table_find(t, "h.0.mlp.c_proj.bias");
    CHECK(filler && w && b);
    if (filler && w && b) {
        CHECK(filler->nbytes == FILLER && filler->numel == FILLER);
        CHECK((uint64_t)(w->data - filler->data) == FILLER); /* more than 32 bits */
        float got[E * I];
        g2f_tensor_read_f32(w, 0, E * I, got);
        CHECK(memcmp(got, fc_w, sizeof got) == 0);
        g2f_tensor_read_f32(b, 0, E, got);
        CHECK(memcmp(got, proj_b, sizeof proj_b) == 0);
    }
    g2f_source_close(s);
}

static void model_should_load_layer_past_4gib(void) {
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_OK);
    if (!m) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    const g2f_model_info *in = g2f_model_get_info(m);
    CHECK(in->n_layer == 1 && in->n_embd == E && in->n_inner == I);
    g2f_layer l;
    CHECK(g2f_model_layer_load(m, 0, &l, &err) == G2F_OK);
    CHECK(memcmp(l.w.w_fc, fc_w, sizeof fc_w) == 0);
    CHECK(memcmp(l.w.b_fc, fc_b, sizeof fc_b) == 0);
    CHECK(memcmp(l.w.w_proj, proj_w, sizeof proj_w) == 0);
    CHECK(memcmp(l.w.b_proj, proj_b, sizeof proj_b) == 0);
    g2f_layer_free(&l);
    g2f_model_close(m);
}

int main(void) {
    char dir[256];
    if (make_tmpdir(dir, sizeof dir, "large") != 0) return 1;
    int w = write_sparse(dir);
    if (w != 0) {
        rmdir(dir);
        return w == 77 ? 77 : 1;
    }
    RUN(source_should_read_tensors_past_4gib);
    RUN(model_should_load_layer_past_4gib);
    unlink(path);
    rmdir(dir);
    CHECK_EXIT();
}
