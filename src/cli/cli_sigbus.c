/* cli_sigbus: see cli_sigbus.h. Only async-signal-safe calls in the
 * handler: write(2), sigaction, raise, pause, _exit; the flag is a lock-free
 * C11 atomic_flag. The handler runs in whichever thread touched the lost
 * page, and the FFN's OpenMP threads read the same weights at once: the
 * first thread prints and exits, the others wait for the exit, so there is
 * one line, and no thread meets the default action in between. */
#include "cli_sigbus.h"
#include "g2f_file.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define EXIT_BAD 2

static atomic_flag reported = ATOMIC_FLAG_INIT;

static void on_sigbus(int sig, siginfo_t *si, void *ctx) {
    (void)ctx;
    if (si && si->si_code == BUS_ADRERR) {
        if (atomic_flag_test_and_set(&reported))
            for (;;) pause(); /* another thread is exiting the process */
        static const char msg[] = "gpt2ffn: an input file was truncated or became unreadable while it was being "
                                  "read (SIGBUS on a mapped page)\n";
        ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
        g2f_outfile_remove_temporaries(); /* unlink only: async-signal-safe */
        _exit(EXIT_BAD);
    }
    /* not a lost file page (another kind of bus error, or kill -BUS): the
     * default action, as if there were no handler */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig); /* delivered at once: SA_NODEFER */
}

int cli_sigbus_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGBUS, &sa, NULL);
}
