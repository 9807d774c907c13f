/* src/dump/gpt2ffn_dump.h compiles as C++ too (ggml and llama.cpp ports
 * are C++; docs/ports.md): with the system's c++ (C++11, -Wall -Wextra
 * -pedantic -Werror) a program using every writer builds, and the dump it
 * writes is the one the C build of the same calls writes, byte for byte.
 * Skipped (77) when there is no c++ compiler (the C build needs none).
 * argv[1] is the fixtures folder (the source tree is its parent). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "gpt2ffn_dump.h"
#include "test_util.h"

static const char program[] =
    "#include \"gpt2ffn_dump.h\"\n"
    "int main(int argc, char **argv) {\n"
    "    (void)argc;\n"
    "    static float x[2 * 3 * 8 * 4];\n"
    "    static int ids[6] = {1, 2, 3, 4, 0, 1};\n"
    "    for (unsigned i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = (float)(i % 13) * 0.25f;\n"
    "    g2f_dump *d = g2f_dump_open(argv[1], G2F_DUMP_AUTO, 2);\n"
    "    g2f_dump_ids(d, ids, 3);\n"
    "    g2f_dump_model(d, \"embed\", x, 3, 4);\n"
    "    g2f_dump_stage(d, 0, \"attn.qkv\", x, 3, 12);\n"
    "    g2f_dump_attn_probs(d, 0, x, 2, 3);\n"
    "    g2f_dump_stage(d, 0, \"mlp.pre\", x, 3, 16);\n"
    "    g2f_dump_logits(d, x, 3, 5, 8);\n"
    "    char msg[G2F_DUMP_MSG_MAX];\n"
    "    return g2f_dump_close(d, msg, sizeof msg) == G2F_DUMP_OK ? 0 : 1;\n"
    "}\n";

static int run(const char *cmd) {
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The same calls from C. */
static int write_c(const char *path) {
    static float x[2 * 3 * 8 * 4];
    static int ids[6] = {1, 2, 3, 4, 0, 1};
    for (unsigned i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = (float)(i % 13) * 0.25f;
    g2f_dump *d = g2f_dump_open(path, G2F_DUMP_AUTO, 2);
    g2f_dump_ids(d, ids, 3);
    g2f_dump_model(d, "embed", x, 3, 4);
    g2f_dump_stage(d, 0, "attn.qkv", x, 3, 12);
    g2f_dump_attn_probs(d, 0, x, 2, 3);
    g2f_dump_stage(d, 0, "mlp.pre", x, 3, 16);
    g2f_dump_logits(d, x, 3, 5, 8);
    char msg[G2F_DUMP_MSG_MAX];
    return g2f_dump_close(d, msg, sizeof msg) == G2F_DUMP_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) return 1;
    if (run("c++ --version > /dev/null 2>&1") != 0) {
        fprintf(stderr, "skipped: no c++ compiler\n");
        return 77;
    }
    char dir[256], src[512], bin[512], out_cxx[512], out_c[512], cmd[4096];
    CHECK(make_tmpdir(dir, sizeof dir, "dump_cxx") == 0);
    snprintf(src, sizeof src, "%s/port.cpp", dir);
    snprintf(bin, sizeof bin, "%s/port", dir);
    snprintf(out_cxx, sizeof out_cxx, "%s/cxx.safetensors", dir);
    snprintf(out_c, sizeof out_c, "%s/c.safetensors", dir);
    FILE *fp = fopen(src, "w");
    CHECK(fp != NULL);
    if (fp) {
        fputs(program, fp);
        fclose(fp);
    }
    snprintf(cmd, sizeof cmd, "c++ -std=c++11 -Wall -Wextra -pedantic -Werror -I '%s/../src/dump' -o '%s' '%s' 2>&1",
             argv[1], bin, src);
    CHECK(run(cmd) == 0);
    snprintf(cmd, sizeof cmd, "'%s' '%s'", bin, out_cxx);
    CHECK(run(cmd) == 0);
    CHECK(write_c(out_c) == 0);
    size_t na = 0, nb = 0;
    char *a = read_whole_file(out_cxx, &na), *b = read_whole_file(out_c, &nb);
    CHECK(a && b && na == nb && na > 0 && memcmp(a, b, na) == 0);
    free(a);
    free(b);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
