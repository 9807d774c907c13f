/* cli_sigbus: the CLI's answer to an input file that shrinks (or fails to
 * read) while it is memory-mapped.
 *
 * The readers map checkpoints and fixtures read-only and validate them at
 * open. If another process truncates a mapped file afterwards, or the
 * storage under it (NFS, FUSE, a removed disk) fails a read, touching the
 * lost page raises SIGBUS, which by default kills the process with a core
 * dump: no message, exit 135. The library installs no signal handler (a
 * process-global choice belongs to the program); the CLI installs this one,
 * which turns a SIGBUS on a mapped page (si_code BUS_ADRERR, as the kernel
 * reports a page past the end of a file or a failed page-in) into the usual
 * failure: one line on stderr and exit 2. Any other SIGBUS keeps its default
 * action. SECURITY.md ("Mapped files") says why and what it cannot do. */
#ifndef CLI_SIGBUS_H
#define CLI_SIGBUS_H

/* Installs the handler for the rest of the process; 0 on success. */
int cli_sigbus_install(void);

#endif
