/* The installed package works for others: cmake --install into a scratch
 * prefix, then build examples/verify_layer.c against it twice, with
 * find_package(gpt2ffn) and with pkg-config, and run both; every installed
 * header compiles on its own, and only the API is installed (gpt2ffn.h and
 * the headers it includes, not the kernels' internals). argv[2] is the
 * CLI, whose folder is the build tree. Skipped (77) in sanitizer builds,
 * whose library needs the sanitizer runtime to link. */
#include <dirent.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "test_util.h"

#ifndef GPT2FFN_SANITIZED
static int sh(const char *cmd) {
    int st = system(cmd);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (rc != 0) fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}
#endif

int main(int argc, char **argv) {
#ifdef GPT2FFN_SANITIZED
    (void)argc;
    (void)argv;
    (void)check_failures;
    fprintf(stderr, "skipped: sanitizer build\n");
    return 77;
#else
    if (argc < 3) return 1;
    char dir[256], cli[512], build[512], src[512], cmd[4096];
    if (make_tmpdir(dir, sizeof dir, "install") != 0) return 1;
    snprintf(cli, sizeof cli, "%s", argv[2]);
    snprintf(build, sizeof build, "%s", dirname(cli)); /* dirname may write into cli */
    snprintf(src, sizeof src, "%s/..", argv[1]); /* the fixtures folder's parent is the source tree */
    snprintf(cmd, sizeof cmd, "cmake --install '%s' --prefix '%s/prefix' > '%s/install.log' 2>&1", build, dir, dir);
    CHECK(sh(cmd) == 0);
    snprintf(cmd, sizeof cmd,
             "cmake -S '%s/examples/consumer' -B '%s/consumer' -DCMAKE_PREFIX_PATH='%s/prefix' > '%s/cmake.log' 2>&1 && "
             "cmake --build '%s/consumer' >> '%s/cmake.log' 2>&1",
             src, dir, dir, dir, dir, dir);
    CHECK(sh(cmd) == 0);
    snprintf(cmd, sizeof cmd, "'%s/consumer/verify_layer' '%s/tiny' '%s/tiny_tanh.safetensors' 2 > /dev/null", dir,
             argv[1], argv[1]);
    CHECK(sh(cmd) == 0);
    snprintf(cmd, sizeof cmd,
             "PKG_CONFIG_PATH='%s/prefix/lib/pkgconfig' cc -std=c11 -o '%s/pc_example' '%s/examples/verify_layer.c' "
             "$(PKG_CONFIG_PATH='%s/prefix/lib/pkgconfig' pkg-config --cflags --libs gpt2ffn) && "
             "'%s/pc_example' '%s/tiny' '%s/tiny_tanh.safetensors' 0 > /dev/null",
             dir, dir, src, dir, dir, argv[1], argv[1]);
    CHECK(sh(cmd) == 0);
    /* each installed header on its own, as the first include of a file */
    char inc[600];
    snprintf(inc, sizeof inc, "%s/prefix/include/gpt2ffn", dir);
    DIR *d = opendir(inc);
    CHECK(d != NULL);
    size_t headers = 0;
    int has_umbrella = 0, has_internal = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 2, ".h") != 0) continue;
        headers++;
        has_umbrella |= strcmp(e->d_name, "gpt2ffn.h") == 0;
        has_internal |= !strcmp(e->d_name, "g2f_simd.h") || !strcmp(e->d_name, "g2f_gelu_math.h") ||
                        !strcmp(e->d_name, "g2f_gelu_coeffs.h") || !strcmp(e->d_name, "g2f_cpu.h");
        snprintf(cmd, sizeof cmd,
                 "printf '#include \"%s\"\\nint main(void) { return 0; }\\n' | "
                 "cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -I'%s' -x c - 2> '%s/header.log'",
                 e->d_name, inc, dir);
        CHECK(sh(cmd) == 0);
    }
    if (d) closedir(d);
    CHECK(has_umbrella);
    CHECK(!has_internal);
    CHECK(headers >= 8 && headers <= 28); /* the API, not every internal header */
    remove_tmpdir(dir);
    CHECK_EXIT();
#endif
}
