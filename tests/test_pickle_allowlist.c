/* The pickle machine's allowlist (SECURITY.md: "exactly 14 names"),
 * enumerated: the list is exactly these 14 (module, name) pairs, each one
 * resolves through GLOBAL and STACK_GLOBAL, and every other global is
 * refused by name: every module of the list with every name of the list
 * that is not its pair, near misses (case, a missing or an extra
 * character, a trailing space, a NUL inside), the torch types torch.save can
 * write but gpt2ffn does not read, and the globals exploits use. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_pickle.h"
#include "pickle_writer.h"

static const char *const expected[][2] = {
    {"collections", "OrderedDict"},   {"torch._utils", "_rebuild_tensor_v2"}, {"torch._utils", "_rebuild_parameter"},
    {"torch", "FloatStorage"},        {"torch", "HalfStorage"},               {"torch", "BFloat16Storage"},
    {"torch", "DoubleStorage"},       {"torch", "LongStorage"},               {"torch", "IntStorage"},
    {"torch", "ShortStorage"},        {"torch", "CharStorage"},               {"torch", "ByteStorage"},
    {"torch", "BoolStorage"},         {"torch.storage", "UntypedStorage"},
};
#define N_EXPECTED (sizeof expected / sizeof expected[0])

static int is_expected(const char *module, const char *name) {
    for (size_t i = 0; i < N_EXPECTED; i++)
        if (!strcmp(expected[i][0], module) && !strcmp(expected[i][1], name)) return 1;
    return 0;
}

/* Parses "PROTO 2; GLOBAL module name (or STACK_GLOBAL); STOP" with the
 * strings given by length (so a NUL can sit inside). 1 when it resolves to
 * an allowed global, 0 when refused naming it; anything else counts as a
 * failure of the test. */
static int resolves(const char *module, size_t ml, const char *name, size_t nl, int stack) {
    start();
    if (stack) {
        op('X');
        u32le((uint32_t)ml);
        memcpy(pk + pn, module, ml), pn += ml;
        op('X');
        u32le((uint32_t)nl);
        memcpy(pk + pn, name, nl), pn += nl;
        op(0x93);
    } else {
        op('c');
        memcpy(pk + pn, module, ml), pn += ml;
        op('\n');
        memcpy(pk + pn, name, nl), pn += nl;
        op('\n');
    }
    op('.');
    g2f_pickle *p = NULL;
    g2f_error err = {0};
    g2f_status s = g2f_pickle_parse(pk, pn, "t.pt: data.pkl", &p, &err);
    int ok = s == G2F_OK && p && g2f_pickle_root(p)->kind == G2F_PV_GLOBAL;
    int refused = s == G2F_ERR_FORMAT && !p && strstr(err.msg, "is not allowed (gpt2ffn reads state dicts only)");
    if (!ok && !refused) {
        fprintf(stderr, "'%.*s %.*s' (%s): status %d, \"%s\"\n", (int)ml, module, (int)nl, name,
                stack ? "STACK_GLOBAL" : "GLOBAL", s, err.msg);
        check_failures++;
    }
    g2f_pickle_free(p);
    return ok;
}

static int resolves_str(const char *module, const char *name, int stack) {
    return resolves(module, strlen(module), name, strlen(name), stack);
}

static void allowlist_should_be_exactly_the_fourteen_names(void) {
    const char *m, *n;
    size_t count = 0;
    for (size_t i = 0; g2f_pickle_allowed_global(i, &m, &n); i++, count++) {
        if (!is_expected(m, n)) {
            fprintf(stderr, "allowlist has '%s %s', which is not one of the 14\n", m, n);
            check_failures++;
        }
    }
    CHECK(count == N_EXPECTED);
    CHECK(N_EXPECTED == 14);
    for (size_t i = 0; i < N_EXPECTED; i++)
        for (int stack = 0; stack < 2; stack++) CHECK(resolves_str(expected[i][0], expected[i][1], stack));
}

static void every_other_global_should_be_refused(void) {
    size_t refused = 0;
    /* every module of the list with every name of the list: only the pairs */
    for (size_t a = 0; a < N_EXPECTED; a++)
        for (size_t b = 0; b < N_EXPECTED; b++)
            for (int stack = 0; stack < 2; stack++) {
                const char *mod = expected[a][0], *name = expected[b][1];
                int ok = resolves_str(mod, name, stack);
                CHECK(ok == is_expected(mod, name));
                refused += !ok;
            }
    /* near misses of each allowed pair */
    for (size_t i = 0; i < N_EXPECTED; i++) {
        const char *mod = expected[i][0], *name = expected[i][1];
        char v[128];
        size_t nl = strlen(name), ml = strlen(mod);
        snprintf(v, sizeof v, "%s ", name); /* trailing space */
        CHECK(!resolves_str(mod, v, 0));
        snprintf(v, sizeof v, "%.*s", (int)nl - 1, name); /* one character short */
        CHECK(!resolves_str(mod, v, 1));
        snprintf(v, sizeof v, "%sX", name); /* one too many */
        CHECK(!resolves_str(mod, v, 0));
        snprintf(v, sizeof v, "%s", name);
        v[0] = (char)(v[0] ^ 0x20); /* case */
        CHECK(!resolves_str(mod, v, 1));
        snprintf(v, sizeof v, "%sx", mod); /* module one too many */
        CHECK(!resolves_str(v, name, 0));
        CHECK(!resolves(mod, ml - 1, name, nl, 1)); /* module one short */
        memcpy(v, name, nl); /* a NUL inside, the full name after it: only STACK_GLOBAL can carry it */
        v[nl] = '\0';
        memcpy(v + nl + 1, name, nl);
        CHECK(!resolves(mod, ml, v, 2 * nl + 1, 1));
        refused += 7;
    }
    /* what torch.save can write but gpt2ffn does not read, and what exploits use */
    static const char *const others[][2] = {
        {"torch", "QInt8Storage"},         {"torch", "QUInt8Storage"},          {"torch", "ComplexFloatStorage"},
        {"torch", "ComplexDoubleStorage"}, {"torch", "QInt32Storage"},          {"torch.storage", "TypedStorage"},
        {"torch", "UntypedStorage"},       {"torch._utils", "_rebuild_qtensor"}, {"torch._utils", "_rebuild_tensor"},
        {"torch._utils", "_rebuild_sparse_tensor"}, {"torch._tensor", "_rebuild_from_type_v2"},
        {"torch.nn.parameter", "Parameter"}, {"torch", "Tensor"},               {"torch", "load"},
        {"torch", "device"},               {"torch", "Size"},                   {"collections", "defaultdict"},
        {"collections", "OrderedDictX"},   {"builtins", "eval"},                {"builtins", "exec"},
        {"builtins", "getattr"},           {"builtins", "__import__"},          {"builtins", "set"},
        {"__builtin__", "eval"},           {"os", "system"},                    {"posix", "system"},
        {"nt", "system"},                  {"subprocess", "Popen"},             {"subprocess", "check_output"},
        {"pickle", "loads"},               {"_pickle", "loads"},                {"marshal", "loads"},
        {"copyreg", "_reconstructor"},     {"functools", "partial"},            {"operator", "attrgetter"},
        {"numpy.core.multiarray", "_reconstruct"}, {"numpy", "dtype"},          {"_codecs", "encode"},
        {"io", "open"},                    {"shutil", "rmtree"},                {"sys", "exit"},
        {"runpy", "run_path"},             {"webbrowser", "open"},              {"", ""},
        {"torch", ""},                     {"", "FloatStorage"},
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        for (int stack = 0; stack < 2; stack++) {
            CHECK(!resolves_str(others[i][0], others[i][1], stack));
            refused++;
        }
    CHECK(refused >= 370);
}

int main(void) {
    (void)tensor; /* pickle_writer.h's, not needed here */
    RUN(allowlist_should_be_exactly_the_fourteen_names);
    RUN(every_other_global_should_be_refused);
    CHECK_EXIT();
}
