/* Which file a folder stands for (g2f_source_open_as, docs/formats.md,
 * Folders): HF's names first; else a fixture folder of .npy files; else the
 * folder's only file of a supported format, told by its name and, for a
 * *.bin, its first bytes; several candidates, or none, are an error listing
 * what the folder holds. Folders are assembled here from the committed
 * fixtures, one case each; every case runs under alarm() (a FIFO among the
 * candidates must not block). argv[1] is the fixtures folder. */
#include <signal.h>
#include <sys/stat.h>

#include "check.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_source.h"
#include "test_util.h"

static const char *fixtures;
static char dir[256];

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test_source: timed out (blocked on a FIFO?)\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
    _exit(3);
}


/* A fresh folder dir/name; *path is its path. */
static void folder(const char *name, char *path, size_t n) {
    snprintf(path, n, "%s/%s", dir, name);
    CHECK(mkdir(path, 0700) == 0);
}

/* Copies fixtures/from into folder f as name (from NULL: a small text). */
static void put(const char *f, const char *from, const char *name) {
    char src[512], dst[512];
    snprintf(dst, sizeof dst, "%s/%s", f, name);
    if (!from) {
        CHECK(write_bytes(dst, "not a tensor file\n", 18) == 0);
        return;
    }
    snprintf(src, sizeof src, "%s/%s", fixtures, from);
    CHECK(copy_file(src, dst) == 0);
}

/* Opens folder f in role; the file chosen must end in want. */
static void expect_file(const char *f, g2f_source_role role, const char *want, int line) {
    g2f_source *s = NULL;
    g2f_error err = {0};
    g2f_status st = g2f_source_open_as(f, role, &s, &err);
    const char *p = st == G2F_OK ? g2f_source_path(s) : "";
    size_t n = strlen(p), k = strlen(want);
    if (st != G2F_OK || n < k || strcmp(p + n - k, want) != 0) {
        fprintf(stderr, "line %d: %s opened '%s' (%s), wanted '%s'\n", line, f, p, err.msg, want);
        check_failures++;
    }
    g2f_source_close(s);
}
#define EXPECT_FILE(f, role, want) expect_file(f, role, want, __LINE__)

/* Opening folder f in role fails with status want_st and a message holding
 * every needle (NULL-terminated). */
static void expect_error(const char *f, g2f_source_role role, g2f_status want_st, const char *const *needles,
                         int line) {
    g2f_source *s = NULL;
    g2f_error err = {0};
    g2f_status st = g2f_source_open_as(f, role, &s, &err);
    if (st != want_st) {
        fprintf(stderr, "line %d: %s: status %d, wanted %d (%s)\n", line, f, st, want_st, err.msg);
        check_failures++;
    }
    for (const char *const *nd = needles; *nd; nd++)
        if (!strstr(err.msg, *nd)) {
            fprintf(stderr, "line %d: \"%s\" not in \"%s\"\n", line, *nd, err.msg);
            check_failures++;
        }
    g2f_source_close(s);
}
#define EXPECT_ERROR(f, role, st, ...) expect_error(f, role, st, (const char *const[]){__VA_ARGS__, NULL}, __LINE__)

static void folder_should_be_its_only_checkpoint_file_of_any_format(void) {
    static const struct { const char *from, *as; } cases[] = {
        {"tiny/model.safetensors", "tiny_cerebras_gpt.safetensors"},
        {"torch/nanogpt_ckpt.pt", "ckpt.pt"},
        {"torch/mingpt_ckpt.pt", "model.pt"},
        {"torch/hf_tiny.bin", "weights.pth"},
        {"torch/hf_tiny.bin", "tiny_gpt2.bin"},            /* a torch.save zip, by its bytes */
        {"formats2/tiny_llmc.bin", "gpt2_124M.bin"},      /* an llm.c file, by its bytes */
        {"formats2/tiny.gguf", "model-f32.gguf"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char f[300], name[32];
        snprintf(name, sizeof name, "one_%zu", i);
        folder(name, f, sizeof f);
        put(f, cases[i].from, cases[i].as);
        put(f, "tiny/config.json", "tiny_config.json"); /* neither is a checkpoint */
        put(f, NULL, "README.txt");
        EXPECT_FILE(f, G2F_SOURCE_CHECKPOINT, cases[i].as);
        /* and it loads as the checkpoint */
        g2f_model *m = NULL;
        g2f_error err = {0};
        CHECK(g2f_model_open(f, NULL, &m, &err) == G2F_OK && g2f_model_get_info(m)->n_layer == 4);
        g2f_model_close(m);
    }
}

static void folder_should_keep_hf_names_first(void) {
    char f[300];
    folder("hf", f, sizeof f);
    put(f, "torch/hf_tiny.bin", "pytorch_model.bin");
    put(f, "tiny/model.safetensors", "other.safetensors");
    EXPECT_FILE(f, G2F_SOURCE_CHECKPOINT, "/pytorch_model.bin");
    put(f, "tiny/model.safetensors", "model.safetensors");
    EXPECT_FILE(f, G2F_SOURCE_CHECKPOINT, "/model.safetensors");
}

static void folder_should_list_several_candidates(void) {
    char f[300];
    folder("several", f, sizeof f);
    put(f, "tiny/model.safetensors", "b.safetensors");
    put(f, "torch/nanogpt_ckpt.pt", "a.pt");
    put(f, "formats2/tiny.gguf", "c.gguf");
    EXPECT_ERROR(f, G2F_SOURCE_CHECKPOINT, G2F_ERR_USAGE, "folder holds 3 checkpoint files",
                 "a.pt, b.safetensors, c.gguf", "name the file instead of the folder");
}

static void folder_should_say_what_it_holds_when_nothing_fits(void) {
    char f[300], p[400];
    folder("nothing", f, sizeof f);
    EXPECT_ERROR(f, G2F_SOURCE_CHECKPOINT, G2F_ERR_IO, "it is empty");
    put(f, NULL, "notes.txt");
    put(f, NULL, "data.bin"); /* neither a torch.save zip nor an llm.c file */
    put(f, "tiny/config.json", "config.json");
    snprintf(p, sizeof p, "%s/x.npy", f);
    CHECK(write_bytes(p, "\x93NUMPY", 6) == 0);
    EXPECT_ERROR(f, G2F_SOURCE_CHECKPOINT, G2F_ERR_IO, "folder holds none of model.safetensors",
                 "it holds config.json, data.bin (neither a torch.save zip nor an llm.c file), notes.txt, x.npy");
    /* a checkpoint folder never offers *.npy; a fixture folder does */
    g2f_source *s = NULL;
    g2f_error err = {0};
    CHECK(g2f_source_open_as(f, G2F_SOURCE_CHECKPOINT, &s, &err) != G2F_OK && !strstr(err.msg, "*.npy"));
    g2f_source_close(s);
}

static void folder_should_take_a_shard_index_with_its_shards(void) {
    char f[300];
    folder("sharded", f, sizeof f);
    /* the index under another name: its shards are its own, not candidates */
    put(f, "torch/sharded/pytorch_model.bin.index.json", "tiny_gpt2.bin.index.json");
    put(f, "torch/sharded/pytorch_model-00001-of-00002.bin", "pytorch_model-00001-of-00002.bin");
    put(f, "torch/sharded/pytorch_model-00002-of-00002.bin", "pytorch_model-00002-of-00002.bin");
    EXPECT_FILE(f, G2F_SOURCE_CHECKPOINT, "tiny_gpt2.bin.index.json");
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(g2f_model_open(f, NULL, &m, &err) == G2F_OK);
    g2f_model_close(m);
    /* the index beside a single-file copy: two candidates */
    put(f, "torch/hf_tiny.bin", "tiny_gpt2.bin");
    EXPECT_ERROR(f, G2F_SOURCE_CHECKPOINT, G2F_ERR_USAGE, "tiny_gpt2.bin, tiny_gpt2.bin.index.json");
}

static void folder_should_be_its_only_fixture_file_of_any_format(void) {
    static const struct { const char *from, *as; } cases[] = {
        {"tiny_tanh.safetensors", "ref.safetensors"},
        {"npz/tiny_tanh.npz", "activations.npz"},
        {"npz/tiny_tanh_compressed.npz", "acts.npz"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char f[300], name[32];
        snprintf(name, sizeof name, "fx_%zu", i);
        folder(name, f, sizeof f);
        put(f, cases[i].from, cases[i].as);
        put(f, "formats2/tiny_llmc.bin", "gpt2.bin"); /* an llm.c file is no fixture */
        EXPECT_FILE(f, G2F_SOURCE_FIXTURE, cases[i].as);
        g2f_fixture *fx = NULL;
        g2f_error err = {0};
        CHECK(g2f_fixture_open(f, &fx, &err) == G2F_OK && g2f_fixture_has_layer(fx, 3));
        g2f_fixture_close(fx);
    }
    /* a folder of .npy files stays a fixture folder, whatever else it holds */
    char f[300], from[400];
    folder("fx_npy", f, sizeof f);
    snprintf(from, sizeof from, "cp '%s/npz/tiny_tanh_npy/'*.npy '%s'", fixtures, f);
    CHECK(system(from) == 0);
    put(f, "tiny_tanh.safetensors", "ref.safetensors");
    EXPECT_FILE(f, G2F_SOURCE_FIXTURE, "fx_npy");
    /* nothing usable: the llm.c file is named as what it is */
    folder("fx_none", f, sizeof f);
    put(f, "formats2/tiny_llmc.bin", "gpt2.bin");
    EXPECT_ERROR(f, G2F_SOURCE_FIXTURE, G2F_ERR_IO, "gpt2.bin (an llm.c checkpoint, not a fixture)");
}

/* A FIFO among the candidates is not read while the folder is searched (it
 * would block); it is a candidate, refused by name when opened. */
static void folder_should_not_block_on_a_fifo(void) {
    char f[300], p[400];
    folder("fifo", f, sizeof f);
    snprintf(p, sizeof p, "%s/weights.bin", f);
    CHECK(mkfifo(p, 0600) == 0);
    alarm(30);
    g2f_source *s = NULL;
    g2f_error err = {0};
    CHECK(g2f_source_open_as(f, G2F_SOURCE_CHECKPOINT, &s, &err) == G2F_ERR_IO);
    CHECK_CONTAINS(err.msg, "weights.bin: is a FIFO");
    g2f_source_close(s);
    put(f, "tiny/model.safetensors", "w.safetensors");
    EXPECT_ERROR(f, G2F_SOURCE_CHECKPOINT, G2F_ERR_USAGE, "w.safetensors, weights.bin");
    alarm(0);
}

int main(int argc, char **argv) {
    if (argc < 2 || make_tmpdir(dir, sizeof dir, "source") != 0) return 1;
    fixtures = argv[1];
    signal(SIGALRM, on_alarm);
    alarm(120);
    RUN(folder_should_be_its_only_checkpoint_file_of_any_format);
    RUN(folder_should_keep_hf_names_first);
    RUN(folder_should_list_several_candidates);
    RUN(folder_should_say_what_it_holds_when_nothing_fits);
    RUN(folder_should_take_a_shard_index_with_its_shards);
    RUN(folder_should_be_its_only_fixture_file_of_any_format);
    RUN(folder_should_not_block_on_a_fifo);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
