/* inspect out of memory: when the statistics of several of a layer's
 * tensors fail (each tensor's buffer refused by tests/failmalloc.c, loaded
 * into the CLI), the error names the first failing tensor in the layer's
 * order, as a one-thread walk would, on any thread count: exit 2, one line.
 * Skipped (77) under the sanitizers and where the shim is not built. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_util.h"

#ifndef FAILMALLOC_PATH
#define FAILMALLOC_PATH "" /* not built here */
#endif

static const char *fixtures, *cli, *const shim = FAILMALLOC_PATH;
static char dir[256];

/* inspect of fixtures/tiny with the mapped tensors' buffers of these sizes
 * refused; its exit code, stderr into err. */
static int inspect_failing(const char *sizes, int threads, char *err, size_t cap) {
    char prefix[1024], args[600], out[4096];
    snprintf(prefix, sizeof prefix, "GPT2FFN_WEIGHTS=map OMP_NUM_THREADS=%d FAIL_SIZES=%s LD_PRELOAD='%s'", threads,
             sizes, shim);
    snprintf(args, sizeof args, "inspect '%s/tiny'", fixtures);
    return run_cli_in(prefix, cli, args, dir, out, sizeof out, err, cap);
}

/* tiny: d 64, so attn.c_attn.weight is 64 x 192 floats (49152 bytes) and
 * attn.c_proj.weight 64 x 64 (16384), the two largest tensors outside the
 * FFN: on two or more threads they go to different workers, on one or
 * three the same one. */
static void inspect_should_name_the_first_failing_tensor_on_any_thread_count(void) {
    char err[4096];
    for (int threads = 1; threads <= 3; threads++) {
        CHECK(inspect_failing("49152,16384", threads, err, sizeof err) == 2);
        CHECK_CONTAINS(err, "transformer.h.0.attn.c_attn.weight: cannot allocate");
        CHECK(strchr(err, '\n') == err + strlen(err) - 1); /* one line */
        CHECK(inspect_failing("16384", threads, err, sizeof err) == 2); /* the only one failing */
        CHECK_CONTAINS(err, "transformer.h.0.attn.c_proj.weight: cannot allocate");
    }
}

int main(int argc, char **argv) {
    if (!*shim) {
        fprintf(stderr, "no tests/failmalloc.c shim in this build (sanitizers): skipped\n");
        return 77;
    }
    if (argc < 3 || make_tmpdir(dir, sizeof dir, "nomem") != 0) return 1;
    fixtures = argv[1];
    cli = argv[2];
    RUN(inspect_should_name_the_first_failing_tensor_on_any_thread_count);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
