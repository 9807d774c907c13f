/* cli_msg: see cli_msg.h. */
#include "cli_msg.h"

#include <stdarg.h>
#include <stdio.h>

#include "g2f_text.h"

/* Messages quote paths and names from files and the command line:
 * everything is escaped for the terminal. */
int cli_bad(const char *fmt, ...) {
    char raw[4096], line[4 * sizeof raw];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gpt2ffn: %s\n", g2f_escape(raw, line, sizeof line));
    return EXIT_BAD;
}
