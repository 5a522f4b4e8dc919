// spmv.h - CSR sparse matrix x dense vector overlay: limits and the top-level function.
//
// Shared by Vitis HLS and hetlab's emulator (g++ -> shared library -> ctypes).
// Keep the limits equal to [limits] in ../overlay.toml (tests/test_fpga_spmv.py checks).
#ifndef HETLAB_SPMV_H
#define HETLAB_SPMV_H

#include <stdint.h>

// Longest x: held on chip (random access by column).
#define SPMV_MAX_COLS 32768
// Most rows and stored entries per call (32-bit registers; sized to a 128 MiB CMA pool).
#define SPMV_MAX_ROWS 1048576
#define SPMV_MAX_NNZ 4194304

extern "C" {
// indptr:  n_rows + 1 int32 row offsets (canonical CSR: 0 first, nnz last). (gmem0)
// indices: nnz int32 columns.                                              (gmem1)
// data:    nnz float32 values.                                             (gmem2)
// x:       n_cols float32.                                                 (gmem3)
// y:       n_rows float32 out.                                             (gmem4)
// A call with n_rows or n_cols == 0 or above the limits, or nnz above its limit, writes
// nothing. Defensive, for malformed input the driver never passes: a column outside
// [0, n_cols) reads x as 0, and no row reads past entry nnz or writes past row n_rows.
void spmv(const int32_t *indptr, const int32_t *indices, const float *data, const float *x,
          float *y, uint32_t n_rows, uint32_t n_cols, uint32_t nnz);
}

#endif
