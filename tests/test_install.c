/* The installed package works for others: cmake --install into a scratch
 * prefix, then build examples/verify_layer.c against it twice, with
 * find_package(gpt2ffn) and with pkg-config, and run both. argv[2] is the
 * CLI, whose folder is the build tree. Skipped (77) in sanitizer builds,
 * whose library needs the sanitizer runtime to link. */
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
    remove_tmpdir(dir);
    CHECK_EXIT();
#endif
}
