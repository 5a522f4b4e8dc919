// spmv.cpp - CSR SpMV y = A @ x as a Vitis-HLS kernel (single source).
//
// Float path (float32, round-to-nearest, no fused multiply-add: -ffp-contract=off here and
// `config_op fmadd -impl none` in Vitis HLS): row i sums its stored entries in storage order,
//   y_i = ((0 + d_0 * x[c_0]) + d_1 * x[c_1]) + ...     (an empty row gives +0.0)
// hetlab.kernels.sparse.fpga.spmv_f32 computes exactly this in NumPy (tests: bit-exact); the
// numpy reference (pairwise sums in float32) agrees within the spmv spec's tolerance.
//
// Structure (mirrored by [[loops]] in ../overlay.toml for the timing model):
//   load_x : n_cols floats from gmem3 into the on-chip x buffer         PIPELINE II=1
//   stream : nnz + n_rows steps, flattened over rows: each step either
//            multiplies-adds one entry (indices/data streamed in order)
//            or closes a row (writes y[r], reads the next row end)      PIPELINE II=4
//            (II = float add latency: the row sum is a carried add in row order)
#include "spmv.h"

extern "C" void spmv(const int32_t *indptr, const int32_t *indices, const float *data,
                     const float *x, float *y, uint32_t n_rows, uint32_t n_cols,
                     uint32_t nnz) {
#pragma HLS INTERFACE m_axi port = indptr offset = slave bundle = gmem0 depth = 1048577 max_read_burst_length = 16
#pragma HLS INTERFACE m_axi port = indices offset = slave bundle = gmem1 depth = 4194304 max_read_burst_length = 16
#pragma HLS INTERFACE m_axi port = data offset = slave bundle = gmem2 depth = 4194304 max_read_burst_length = 16
#pragma HLS INTERFACE m_axi port = x offset = slave bundle = gmem3 depth = 32768 max_read_burst_length = 16
#pragma HLS INTERFACE m_axi port = y offset = slave bundle = gmem4 depth = 1048576 max_write_burst_length = 16
#pragma HLS INTERFACE s_axilite port = indptr bundle = control
#pragma HLS INTERFACE s_axilite port = indices bundle = control
#pragma HLS INTERFACE s_axilite port = data bundle = control
#pragma HLS INTERFACE s_axilite port = x bundle = control
#pragma HLS INTERFACE s_axilite port = y bundle = control
#pragma HLS INTERFACE s_axilite port = n_rows bundle = control
#pragma HLS INTERFACE s_axilite port = n_cols bundle = control
#pragma HLS INTERFACE s_axilite port = nnz bundle = control
#pragma HLS INTERFACE s_axilite port = return bundle = control

    static float xb[SPMV_MAX_COLS];

    if (n_rows == 0 || n_rows > SPMV_MAX_ROWS || n_cols == 0 || n_cols > SPMV_MAX_COLS ||
        nnz > SPMV_MAX_NNZ) {
        return;
    }

load_x:
    for (uint32_t j = 0; j < n_cols; ++j) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 32768
        xb[j] = x[j];
    }

    uint32_t r = 0;
    uint32_t k = (uint32_t)indptr[0];
    uint32_t row_end = (uint32_t)indptr[1];
    float sum = 0.0f;
stream:
    for (uint32_t it = 0; it < nnz + n_rows; ++it) {
#pragma HLS PIPELINE II = 4
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 5242880
        if (k < row_end && k < nnz) {
            const uint32_t c = (uint32_t)indices[k];
            const float xv = c < n_cols ? xb[c] : 0.0f;
            const float p = data[k] * xv;
            sum = sum + p;
            ++k;
        } else if (r < n_rows) {
            y[r] = sum;
            sum = 0.0f;
            ++r;
            if (r < n_rows) {
                row_end = (uint32_t)indptr[r + 1];
            }
        }
    }
}
