/* g2f_source: opens whatever checkpoint or fixture file (or folder) the user
 * names, picks the reader from the bytes (g2f_probe), and exposes one tensor
 * table. Sharded checkpoints (an HF *.index.json with a weight_map) become
 * one table over all their shards.
 *
 * Folder (g2f_source_open_as says what it should hold):
 *   1. the first of model.safetensors, model.safetensors.index.json,
 *      pytorch_model.bin, pytorch_model.bin.index.json that exists and is
 *      not a folder (a FIFO of that name is then refused by name, not
 *      skipped): HF's names keep precedence;
 *   2. a fixture: the folder itself when it holds *.npy files;
 *   3. else exactly one file of a supported format, by its name and, for
 *      *.bin, its first bytes: *.safetensors, *.pt, *.pth, a *.bin that is a
 *      torch.save zip (or, for a checkpoint, an llm.c file; for a fixture,
 *      an llm.c debug state), *.gguf and *.index.json shard indexes
 *      (checkpoints), *.npz (fixtures). The
 *      shards of an index (HF's NAME-00001-of-00002.EXT) are not candidates
 *      of their own when the folder holds an index. None is G2F_ERR_IO, and
 *      several G2F_ERR_USAGE, with a message listing what the folder holds.
 *
 * Shard index validation, in this order:
 *   1. a regular file of at most 64 MiB holding a JSON object with
 *      "weight_map" an object of tensor name -> shard file name, each a plain
 *      file name in the index's folder (no '/', no "..", not empty), at most
 *      1,000,000 entries;
 *   2. no object in the index holds a key twice (g2f_json): a tensor is
 *      mapped to one shard;
 *   3. "metadata", when present, is an object, and its "total_size", when
 *      present, an integer in [0, 2^53);
 *   4. at most 4096 distinct shard names; names reaching the same file
 *      (hard links, symlinks: same device and inode) open it once;
 *   5. every shard file is a regular file, opened and validated by its own
 *      reader;
 *   6. every mapped tensor is in its shard (sorted lookups, n log n);
 *   7. total_size, when present, equals the bytes of the mapped tensors.
 *
 * Ownership: the table and every data pointer in it are borrowed from the
 * source, valid until g2f_source_close.
 */
#ifndef G2F_SOURCE_H
#define G2F_SOURCE_H

#include <stddef.h>

#include "g2f_error.h"
#include "g2f_file.h"
#include "g2f_llmc_state.h"
#include "g2f_probe.h"
#include "g2f_tensor.h"

typedef struct g2f_source g2f_source;

/* What a folder is searched for: a checkpoint, a fixture, or either. */
typedef enum g2f_source_role {
    G2F_SOURCE_ANY,
    G2F_SOURCE_CHECKPOINT,
    G2F_SOURCE_FIXTURE,
    G2F_SOURCE_ROLE_COUNT
} g2f_source_role;

/* Opens a file, or the one file a folder stands for (see above). */
g2f_status g2f_source_open_as(const char *path, g2f_source_role role, g2f_source **out, g2f_error *err);
/* What a reader cannot learn from the file itself, from the checkpoint the
 * file is checked against (all NULL: nothing known). */
typedef struct g2f_source_hints {
    /* llm.c's debug state stores logits (B, T, V) and gradients without V or
     * the parameter count (g2f_llmc_state.h); without these it is refused
     * after its header is checked */
    const g2f_llmc_state_dims *llmc_state;
} g2f_source_hints;
/* g2f_source_open_as with hints (may be NULL). */
g2f_status g2f_source_open_hinted(const char *path, g2f_source_role role, const g2f_source_hints *hints,
                                  g2f_source **out, g2f_error *err);
/* g2f_source_open_as(path, G2F_SOURCE_ANY, ...). */
g2f_status g2f_source_open(const char *path, g2f_source **out, g2f_error *err);
const g2f_table *g2f_source_table(const g2f_source *s);
/* The format of the (first) data file. */
g2f_format g2f_source_format(const g2f_source *s);
/* "safetensors", "safetensors, 3 shards", "safetensors, 1 shard under 3
 * names" (links), ... (borrowed). */
const char *g2f_source_description(const g2f_source *s);
/* The file opened (the index for sharded checkpoints). */
const char *g2f_source_path(const g2f_source *s);
/* The files the source was read from, appended to out: for a shard index
 * the index, then each shard (sorted by name); for a folder of .npy files
 * every *.npy in it; else the file itself. So that no output replaces an
 * input (g2f_output_check). */
g2f_status g2f_source_files(const g2f_source *s, g2f_path_list *out, g2f_error *err);
/* The shards of a shard index, sorted by name (byte order), appended to
 * out; nothing for any other source. */
g2f_status g2f_source_shards(const g2f_source *s, g2f_path_list *out, g2f_error *err);
/* NULL is a no-op. */
void g2f_source_close(g2f_source *s);
/* The mapping of one of the source's files that holds [p, p + len) (a
 * tensor's data from its table), or NULL (also for .npy/.npz files, which
 * are read in place only): what g2f_mapping_read copies from. */
const g2f_mapping *g2f_source_mapping_of(const g2f_source *s, const void *p, uint64_t len);

#endif
