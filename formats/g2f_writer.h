/* g2f_writer: writes float32 tensors as safetensors or as a NumPy .npz
 * (stored members), streaming one tensor at a time, atomically: everything
 * goes to PATH.tmp-PID (a g2f_outfile, g2f_file.h: removed by the CLI on
 * SIGINT / SIGTERM), which is renamed to PATH only by a successful
 * g2f_writer_close(w, 1); an interrupted or failed write leaves no file
 * under the requested name.
 *
 * safetensors: header with every tensor's dtype F32, shape and offsets
 * (padded with spaces to 8 bytes), __metadata__ from meta, then the data.
 * npz: one NAME.npy member per tensor (header version 1, '<f4', C order)
 * plus, when meta is given, "__metadata__.npy": a uint8 array holding the
 * metadata as a JSON object (np.load(f)["__metadata__"].tobytes()).
 * Members above 4 GiB are refused (no ZIP64 writing).
 *
 * Failure model: a write the system refuses (disk full, EFBIG) is
 * G2F_ERR_IO naming PATH, and every later call fails; g2f_writer_close then
 * removes the temporary file and frees everything (test_writer_errors).
 */
#ifndef G2F_WRITER_H
#define G2F_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"
#include "g2f_tensor.h"

typedef enum g2f_out_format { G2F_OUT_SAFETENSORS, G2F_OUT_NPZ, G2F_OUT_FORMAT_COUNT } g2f_out_format;

typedef struct g2f_out_spec {
    const char *name;
    size_t ndim;
    uint64_t shape[G2F_MAX_DIMS];
} g2f_out_spec;

/* One metadata pair to write: borrowed strings, read only during
 * g2f_writer_open (a table's g2f_meta_entry owns its strings; this does not,
 * so string literals need no cast). */
typedef struct g2f_out_meta {
    const char *key;
    const char *value;
} g2f_out_meta;

typedef struct g2f_writer g2f_writer;

/* Starts the file; specs (copied) fix the order of g2f_writer_put calls. */
g2f_status g2f_writer_open(const char *path, g2f_out_format format, const g2f_out_spec *specs, size_t n,
                           const g2f_out_meta *meta, size_t n_meta, g2f_writer **out, g2f_error *err);
/* The same, with i64 (n flags, may be NULL): the tensors flagged hold int64
 * values (token ids: safetensors I64, npy '<i8'), put with
 * g2f_writer_put_i64_part. */
g2f_status g2f_writer_open_typed(const char *path, g2f_out_format format, const g2f_out_spec *specs,
                                 const unsigned char *i64, size_t n, const g2f_out_meta *meta, size_t n_meta,
                                 g2f_writer **out, g2f_error *err);
g2f_status g2f_writer_put_i64_part(g2f_writer *w, const int64_t *data, size_t count, g2f_error *err);
/* Writes the next tensor's data (numel floats, in spec order). */
g2f_status g2f_writer_put(g2f_writer *w, const float *data, g2f_error *err);
/* Writes the next count floats of the current tensor: a tensor may be put
 * in parts (a chunk of tokens at a time), and the next one begins once its
 * numel floats are in. */
g2f_status g2f_writer_put_part(g2f_writer *w, const float *data, size_t count, g2f_error *err);
/* Replaces the value of metadata key, given at open, by value: a value
 * known only once the data is written (run's checkpoint digest, hashed
 * beside the work, over a placeholder of 64 hex digits). The metadata must
 * come out as long as before (the safetensors header is rewritten in place,
 * an .npz's is written at the close); G2F_ERR_USAGE when it would not, or
 * key is not one given at open. Before g2f_writer_close. */
g2f_status g2f_writer_set_meta(g2f_writer *w, const char *key, const char *value, g2f_error *err);
/* commit: finish and rename into place (every tensor must have been put);
 * otherwise remove the temporary file. Frees w either way. */
g2f_status g2f_writer_close(g2f_writer *w, int commit, g2f_error *err);

#endif
