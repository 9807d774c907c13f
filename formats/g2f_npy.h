/* g2f_npy: NumPy .npy arrays, .npz archives of them (np.savez stored,
 * np.savez_compressed deflated) and folders of .npy files, as tensor tables.
 *
 * .npy byte layout:
 *   [0, 6)    "\x93NUMPY"
 *   [6]       major version 1, 2 or 3;  [7] minor version
 *   [8, 10)   u16 header length H (version 1), or [8, 12) u32 (versions 2, 3)
 *   then H bytes: a Python dict literal, e.g.
 *             {'descr': '<f4', 'fortran_order': False, 'shape': (2, 6, 64), }
 *             padded with spaces and ending in '\n'
 *   then the array data, C order.
 * Validation, in this order: magic; version; header length within the file
 * and at most G2F_NPY_MAX_HEADER; the header is ASCII (UTF-8 for v3) holding
 * exactly the keys 'descr' (a string), 'fortran_order' (True/False) and
 * 'shape' (a tuple of at most G2F_MAX_DIMS non-negative integers), each
 * once (a repeated key is refused: Python's literal_eval keeps the last),
 * nothing else; descr little-endian or byte-order-free ('<', '|', '=') f2/f4/f8,
 * i1/i2/i4/i8, u1/u2/u4/u8 or b1 (big-endian refused); fortran_order False
 * (a Fortran-order array is refused: re-save with np.ascontiguousarray);
 * element count x item size computed without overflow and equal to the bytes
 * after the header (a lying header is an error, not a short read).
 *
 * .npz: a zip (g2f_zip) whose members are NAME.npy; the tensor is named NAME.
 * Stored members are used in place; deflated ones are inflated (declared
 * size and ratio checked by g2f_zip) into buffers the table owns.
 * Folder: every NAME.npy directly inside it (at most G2F_NPY_MAX_FILES),
 * each a regular file (a FIFO or folder named x.npy is refused by name).
 * Array names are unique (sorted, g2f_names).
 * Metadata: an "__metadata__" member of dtype u8, one dimension, at most
 * 1 MiB, holding a JSON object becomes the table's metadata (string values
 * only); an object in it holding a key twice is refused (g2f_json).
 *
 * Ownership: the table and its data are valid until g2f_npz_close.
 */
#ifndef G2F_NPY_H
#define G2F_NPY_H

#include <stdint.h>

#include "g2f_error.h"
#include "g2f_tensor.h"

#define G2F_NPY_MAX_HEADER 65536u
/* Each file of a folder is one memory mapping, and Linux allows a process
 * 65,530 (vm.max_map_count): a limit above that could never be reached (a
 * folder of 70,000 files failed with "cannot mmap"). 4096 files is 1024
 * layers of a fixture. */
#define G2F_NPY_MAX_FILES 4096u
/* Inflated .npz members larger than this are refused (activations of GPT-2
 * XL over 8k tokens are 0.4 GB per tensor). */
#define G2F_NPZ_MAX_MEMBER ((uint64_t)1 << 34)

/* Parses one .npy image; fills t (not its name) with a view into buf. */
g2f_status g2f_npy_parse(const unsigned char *buf, uint64_t size, const char *label, g2f_tensor *t,
                         g2f_error *err);

typedef struct g2f_npz g2f_npz;

/* path: an .npz file (zip of .npy members) or a folder of .npy files. */
g2f_status g2f_npz_open(const char *path, g2f_npz **out, g2f_error *err);
const g2f_table *g2f_npz_table(const g2f_npz *z);
/* NULL is a no-op. */
void g2f_npz_close(g2f_npz *z);

/* True when buf[0, size) is a valid zip whose members are all .npy files
 * (an .npz). */
int g2f_npz_probe_members(const unsigned char *buf, uint64_t size);

#endif
