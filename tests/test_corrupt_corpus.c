/* The corrupt corpus (tests/corrupt/, written by scripts/make_corrupt_corpus.py):
 * every file, run through the CLI in its role, must give exit code 2, exactly
 * one line on stderr naming the file (or the case's folder) and holding the
 * expected message, and nothing on stdout. Never a crash, a hang, a report.
 * Role llmc_state (a folder: an llm.c checkpoint and a debug state made for
 * it) is read through the library by test_llmc_state, with the checkpoint's
 * sizes, until verify passes them to the state reader: counted here, not run.
 * argv[1] is the fixtures folder, argv[2] the CLI. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include "check.h"
#include "test_util.h"

#define CASE_TIMEOUT_S 120

/* Runs argv with stdout/stderr into files; returns the exit status, or
 * 128 + signal, or -1. */
static int run_cli(char *const argv[], const char *out, const char *err) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fo < 0 || fe < 0) _exit(126);
        dup2(fo, 1);
        dup2(fe, 2);
        alarm(CASE_TIMEOUT_S); /* a hang becomes SIGALRM, a failure */
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static const char *fixtures, *cli;
static size_t cases = 0, library_cases = 0;

static void corrupt_files_should_exit_2_with_one_line(void) {
    char corrupt[4096], manifest[4200], tmp[256], out[300], err[300];
    snprintf(corrupt, sizeof corrupt, "%s/../tests/corrupt", fixtures);
    snprintf(manifest, sizeof manifest, "%s/MANIFEST", corrupt);
    char *text = read_whole_file(manifest, NULL);
    CHECK(text != NULL);
    if (!text) return;
    CHECK(make_tmpdir(tmp, sizeof tmp, "corrupt") == 0);
    snprintf(out, sizeof out, "%s/stdout", tmp);
    snprintf(err, sizeof err, "%s/stderr", tmp);
    char tiny[4200];
    snprintf(tiny, sizeof tiny, "%s/tiny", fixtures);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || !line[0]) continue;
        char *sp1 = strchr(line, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        CHECK(sp1 && sp2);
        if (!sp1 || !sp2) continue;
        *sp1 = *sp2 = '\0';
        const char *rel = line, *role = sp1 + 1, *expected = sp2 + 1;
        char path[8192], name[8192];
        snprintf(path, sizeof path, "%s/%s", corrupt, rel);
        /* the case: its first two path components (format/case) */
        snprintf(name, sizeof name, "%s", rel);
        char *slash = strchr(name, '/');
        if (slash && (slash = strchr(slash + 1, '/'))) *slash = '\0';
        if (!strcmp(role, "llmc_state")) { /* test_llmc_state */
            library_cases++;
            continue;
        }
        int is_fixture = !strcmp(role, "fixture");
        CHECK(is_fixture || !strcmp(role, "checkpoint"));
        char *argv_ck[] = {(char *)cli, "inspect", path, NULL};
        char *argv_fx[] = {(char *)cli, "verify", tiny, path, NULL};
        int rc = run_cli(is_fixture ? argv_fx : argv_ck, out, err);
        char *so = read_whole_file(out, NULL), *se = read_whole_file(err, NULL);
        size_t nl = 0;
        for (const char *c = se; c && *c; c++) nl += *c == '\n';
        /* the expected text must be in the message, not in the path */
        const char *named = se ? strstr(se, name) : NULL;
        int ok = rc == 2 && so && !so[0] && se && nl == 1 && se[strlen(se) - 1] == '\n' && named &&
                 strstr(named + strlen(name), expected);
        if (!ok)
            fprintf(stderr, "corrupt case %s (%s): exit %d, %zu stderr lines, %zu stdout bytes, expected \"%s\"; "
                            "stderr: %s\n",
                    rel, role, rc, nl, so ? strlen(so) : 0, expected, se ? se : "(none)");
        CHECK(ok);
        free(so);
        free(se);
        cases++;
    }
    free(text);
    unlink(out);
    unlink(err);
    rmdir(tmp);
    CHECK(cases >= 40);
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    fixtures = argv[1];
    cli = argv[2];
    RUN(corrupt_files_should_exit_2_with_one_line);
    fprintf(stderr, "%zu corrupt files checked (and %zu llmc_state cases left to test_llmc_state)\n", cases,
            library_cases);
    CHECK_EXIT();
}
