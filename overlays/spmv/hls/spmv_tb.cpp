// spmv_tb.cpp - C-simulation testbench for spmv() (Vitis HLS csim_design, or plain g++).
//
// Random CSR matrices (empty rows, a dense row, one row, one column, nnz = 0) against a naive
// row loop in the documented order (bit for bit) and a double-precision sum (within 1e-5 of
// the row's sum of magnitudes); invalid scalars must write nothing. Exit 0 when all pass.
//
//   g++ -std=c++14 -O2 -ffp-contract=off -Wno-unknown-pragmas spmv.cpp spmv_tb.cpp -o tb
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "spmv.h"

static uint32_t lcg_state = 777u;
static uint32_t lcg() {
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lcg_state >> 8;
}

static int run_case(uint32_t n_rows, uint32_t n_cols, uint32_t density_pct) {
    std::vector<int32_t> indptr(n_rows + 1, 0), indices;
    std::vector<float> data, x(n_cols), y(n_rows, -1.0f);
    for (uint32_t r = 0; r < n_rows; ++r) {
        for (uint32_t c = 0; c < n_cols; ++c) {
            if (lcg() % 100 < density_pct) {
                indices.push_back((int32_t)c);
                data.push_back((float)((int)(lcg() % 20001) - 10000) / 77.0f);
            }
        }
        indptr[r + 1] = (int32_t)indices.size();
    }
    for (auto &v : x) v = (float)((int)(lcg() % 2001) - 1000) / 13.0f;
    const uint32_t nnz = (uint32_t)indices.size();
    indices.push_back(0);  // keep .data() valid when nnz == 0
    data.push_back(0.0f);
    spmv(indptr.data(), indices.data(), data.data(), x.data(), y.data(), n_rows, n_cols, nnz);
    for (uint32_t r = 0; r < n_rows; ++r) {
        float s = 0.0f;
        double exact = 0.0, mag = 0.0;
        for (int32_t k = indptr[r]; k < indptr[r + 1]; ++k) {
            s = s + data[k] * x[indices[k]];
            exact += (double)data[k] * x[indices[k]];
            mag += fabs((double)data[k] * x[indices[k]]);
        }
        if (memcmp(&s, &y[r], 4) != 0 || fabs(y[r] - exact) > 1e-5 * mag) {
            printf("FAIL n_rows=%u n_cols=%u density=%u%%: row %u got %.9g want %.9g\n", n_rows,
                   n_cols, density_pct, r, y[r], s);
            return 1;
        }
    }
    // invalid scalars: nothing written
    std::vector<float> untouched(n_rows, -3.0f);
    spmv(indptr.data(), indices.data(), data.data(), x.data(), untouched.data(), 0, n_cols, nnz);
    spmv(indptr.data(), indices.data(), data.data(), x.data(), untouched.data(), n_rows, 0, nnz);
    for (float v : untouched) {
        if (v != -3.0f) {
            printf("FAIL: an invalid call wrote y\n");
            return 1;
        }
    }
    return 0;
}

int main() {
    int fails = 0;
    const uint32_t shapes[][2] = {{1, 1}, {1, 50}, {50, 1}, {7, 9}, {64, 64}, {200, 333}};
    const uint32_t densities[] = {0, 3, 30, 100};
    for (auto &s : shapes)
        for (uint32_t d : densities) fails += run_case(s[0], s[1], d);
    if (fails) {
        printf("%d case(s) failed\n", fails);
        return 1;
    }
    printf("spmv_tb: all cases passed\n");
    return 0;
}
