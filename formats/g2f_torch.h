/* g2f_torch: reader for PyTorch torch.save checkpoints (torch >= 1.6, the zip
 * format): HF pytorch_model.bin, nanoGPT/minGPT ckpt.pt and the like, turned
 * into the same tensor table as safetensors: names, dtype, shape and pointers
 * into the read-only mapping; no tensor data is copied.
 *
 * Byte layout: a zip archive (g2f_zip.h) whose members all sit in one root
 * folder, named by whatever wrote it (the file stem: "ckpt/",
 * "pytorch_model/", older torch "archive/"):
 *   <root>/data.pkl          pickle (protocol 2) of the saved object; tensors
 *                            are _rebuild_tensor_v2 calls on persistent ids
 *                            ('storage', torch.FloatStorage, key, location, numel)
 *   <root>/data/<key>        each storage's raw little-endian bytes, stored
 *                            (uncompressed), usually aligned to 64 bytes
 *   <root>/byteorder         "little" or "big" (optional, torch >= 1.10)
 *   <root>/.format_version, <root>/.storage_alignment, <root>/version,
 *   <root>/.data/...         optional; not needed here
 *
 * Validation, in this order; the first violation is the error:
 *   1. a legacy (pre-1.6) torch.save file, a raw pickle starting 0x80 0x02
 *      then the magic number 0x1950a86a20f9469cfc6c, is refused by name; any
 *      other file not starting with a zip local header ("PK\3\4") is refused;
 *   2. the zip checklist of g2f_zip.h;
 *   3. exactly one member is named <root>/data.pkl with a one-folder root;
 *   4. <root>/byteorder, when present, is "little" ("big" is refused);
 *   5. data.pkl's CRC-32 (stored, or deflated and at most
 *      G2F_TORCH_MAX_PICKLE bytes), then the restricted pickle machine
 *      (g2f_pickle.h: allowlisted globals only, bounded everything);
 *   6. the object is walked through dicts (str or int keys), lists and
 *      tuples, at most G2F_TORCH_MAX_DEPTH deep and visiting at most
 *      G2F_TORCH_VISITS_PER_VALUE x values + 1024 nodes (shared containers
 *      could otherwise make the walk exponential); every tensor found becomes
 *      an entry named by its key path joined with "." (nanoGPT:
 *      "model._orig_mod.transformer.h.0.mlp.c_fc.weight", optimizer state:
 *      "optimizer.state.3.exp_avg"), at most G2F_TORCH_MAX_NAME bytes, with
 *      no NUL; a tensor under another key type is refused; names are unique;
 *      a tensor saved alone is named "";
 *   7. per tensor: its storage member <root>/data/<key> exists, is stored
 *      (method 0), has a good CRC-32 (checked once per member: storages may
 *      be shared; a flag per member index remembers it, so finding whether
 *      it was checked is O(1)) and holds exactly numel x dtype size bytes of
 *      the storage type; the strides are the contiguous row-major ones (size-1 dimensions
 *      excepted, as torch's is_contiguous): a NON-CONTIGUOUS TENSOR (saved
 *      from a transposed or sliced view) IS REFUSED, naming it, rather than
 *      copied; storage offset + element count lies inside the storage
 *      (computed without overflow).
 * Everything else in the object (ints, floats, strings, None, storages not
 * used by a tensor) is ignored. Table metadata:
 * G2F_TORCH_META_MODEL_ARGS = "beside model", when the saved object is a
 * dict holding both a "model" and a "model_args" key, as nanoGPT's train.py
 * saves its training checkpoints (whose model.py runs nn.GELU(), exact
 * erf); and "torch:model_args.n_head", "torch:model_args.n_embd",
 * "torch:model_args.n_layer" (and the same under "torch:config.") for the
 * integer fields of a top-level 'model_args' (nanoGPT) or 'config' dict, as
 * decimal strings, unvalidated (the model checks them against the tensors);
 * none otherwise.
 *
 * Dtypes: FloatStorage F32, HalfStorage F16, BFloat16Storage BF16,
 * DoubleStorage F64, LongStorage I64, IntStorage I32, ShortStorage I16,
 * CharStorage I8, ByteStorage U8, BoolStorage BOOL, UntypedStorage U8.
 * Data pointers may be unaligned; read them through g2f_tensor_read_*.
 *
 * Not read here: sharded checkpoints (pytorch_model.bin.index.json).
 *
 * Ownership: as g2f_safetensors: the table and its data pointers are
 * borrowed and valid until g2f_torch_close (g2f_torch_parse: while buf lives).
 *
 *     g2f_torch *pt;
 *     if (g2f_torch_open("ckpt.pt", &pt, &err) != G2F_OK) return err.status;
 *     const g2f_tensor *w = g2f_table_find(g2f_torch_table(pt), "model.transformer.h.0.mlp.c_fc.weight");
 *     g2f_torch_close(pt);
 */
#ifndef G2F_TORCH_H
#define G2F_TORCH_H

#include <stdint.h>

#include "g2f_error.h"
#include "g2f_file.h"
#include "g2f_tensor.h"

#define G2F_TORCH_MAX_PICKLE (1ull << 30)
#define G2F_TORCH_MAX_DEPTH 64u
#define G2F_TORCH_MAX_NAME 4096u
#define G2F_TORCH_VISITS_PER_VALUE 4u
/* The metadata key marking a nanoGPT training checkpoint (see above). */
#define G2F_TORCH_META_MODEL_ARGS "torch:model_args"
/* Integer sizes of the model_args / config dicts (see above). */
#define G2F_TORCH_META_ARGS_N_HEAD "torch:model_args.n_head"
#define G2F_TORCH_META_ARGS_N_EMBD "torch:model_args.n_embd"
#define G2F_TORCH_META_CONFIG_N_HEAD "torch:config.n_head"
#define G2F_TORCH_META_CONFIG_N_EMBD "torch:config.n_embd"
#define G2F_TORCH_META_ARGS_N_LAYER "torch:model_args.n_layer"
#define G2F_TORCH_META_CONFIG_N_LAYER "torch:config.n_layer"

typedef g2f_mapped_table g2f_torch;

/* True when the bytes are a legacy (pre-1.6) torch.save pickle. */
int g2f_torch_is_legacy(const unsigned char *buf, uint64_t size);

/* Validates a torch.save zip image in memory and fills out with views into
 * buf. label names the file in messages. On failure out is empty. */
g2f_status g2f_torch_parse(const unsigned char *buf, uint64_t size, const char *label, g2f_table *out,
                           g2f_error *err);

/* Maps and reads path. *out is set only on success. */
g2f_status g2f_torch_open(const char *path, g2f_torch **out, g2f_error *err);
/* Borrowed; valid until g2f_torch_close. */
const g2f_table *g2f_torch_table(const g2f_torch *pt);
/* Unmaps and frees; NULL is a no-op. */
void g2f_torch_close(g2f_torch *pt);

#endif
