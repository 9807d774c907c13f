/* cli_msg: the CLI's one way to refuse: one line on stderr, escaped for the
 * terminal (g2f_text.h), and the exit code for bad input. Shared by the
 * command files (cli.c, cli_decode.c). */
#ifndef CLI_MSG_H
#define CLI_MSG_H

#define EXIT_MISMATCH 1
#define EXIT_BAD 2

/* "gpt2ffn: <message>\n" on stderr; returns EXIT_BAD. */
int cli_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
