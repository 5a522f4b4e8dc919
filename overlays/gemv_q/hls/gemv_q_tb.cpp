// gemv_q_tb.cpp - C-simulation testbench for gemv_q() (Vitis HLS csim_design, or plain g++).
//
// Random 4-bit matrices with integer zero points and power-of-two-ish float16 scales:
//  * one-hot x with scale 1, zero 0 returns the codes themselves (integer path, exact);
//  * random x: the kernel equals, bit for bit, a naive loop written in the documented order
//    (gemv_q.cpp header), and a double-precision dot within 1e-4 relative.
// Shapes: group_size 32/64/128, one and several groups, one row and many. Exit 0 when all pass.
//
//   g++ -std=c++14 -O2 -ffp-contract=off -Wno-unknown-pragmas gemv_q.cpp gemv_q_tb.cpp -o tb
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "gemv_q.h"

static uint32_t lcg_state = 2024u;
static uint32_t lcg() {
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lcg_state >> 8;
}

// float16 of 2**e (e in [-14, 15]) and of a small integer (0..15): exact bit patterns
static uint16_t half_pow2(int e) { return (uint16_t)((e + 15) << 10); }
static uint16_t half_int(uint32_t v) {
    if (v == 0) return 0;
    int p = 31 - __builtin_clz(v);
    return (uint16_t)(((p + 15) << 10) | ((v << (10 - p)) & 0x3ffu));
}

static uint32_t code(const std::vector<uint32_t> &qw, uint32_t cols, uint32_t r, uint32_t c) {
    return (qw[r * (cols / 8) + c / 8] >> (4 * (c % 8))) & 0xfu;
}

static int run_case(uint32_t rows, uint32_t cols, uint32_t gs, bool onehot) {
    const uint32_t ng = cols / gs;
    std::vector<uint32_t> qw(rows * cols / 8);
    std::vector<uint16_t> s(rows * ng), z(rows * ng);
    std::vector<float> sf(rows * ng), zf(rows * ng), x(cols), y(rows, -1.0f);
    for (auto &w : qw) w = lcg() ^ (lcg() << 16);
    for (uint32_t i = 0; i < rows * ng; ++i) {
        int e = onehot ? 0 : -(int)(lcg() % 12) - 2;
        uint32_t zi = onehot ? 0 : lcg() % 16;
        s[i] = half_pow2(e);
        z[i] = half_int(zi);
        sf[i] = ldexpf(1.0f, e);
        zf[i] = (float)zi;
    }
    const uint32_t hot = lcg() % cols;
    for (uint32_t j = 0; j < cols; ++j)
        x[j] = onehot ? (j == hot ? 1.0f : 0.0f) : (float)((int)(lcg() % 2001) - 1000) / 97.0f;
    gemv_q(qw.data(), s.data(), z.data(), x.data(), y.data(), rows, cols, gs);
    for (uint32_t r = 0; r < rows; ++r) {
        if (onehot) {
            if (y[r] != (float)code(qw, cols, r, hot)) {
                printf("FAIL one-hot rows=%u cols=%u gs=%u: row %u got %g want %u\n", rows, cols,
                       gs, r, y[r], code(qw, cols, r, hot));
                return 1;
            }
            continue;
        }
        float yr = 0.0f;
        double exact = 0.0, mag = 0.0;
        for (uint32_t g = 0; g < ng; ++g) {
            float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (uint32_t wi = 0; wi < gs / 8; ++wi) {
                float p[8];
                for (uint32_t k = 0; k < 8; ++k) {
                    uint32_t c = g * gs + wi * 8 + k;
                    p[k] = ((float)code(qw, cols, r, c) - zf[r * ng + g]) * x[c];
                    exact += ((double)code(qw, cols, r, c) - zf[r * ng + g]) * sf[r * ng + g] * x[c];
                    mag += fabs(((double)code(qw, cols, r, c) - zf[r * ng + g]) * sf[r * ng + g] * x[c]);
                }
                a[wi % 4] = a[wi % 4] + (((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7])));
            }
            float gsum = (a[0] + a[1]) + (a[2] + a[3]);
            yr = yr + gsum * sf[r * ng + g];
        }
        if (memcmp(&yr, &y[r], 4) != 0 || fabs(y[r] - exact) > 1e-4 * (mag + 1e-30)) {
            printf("FAIL rows=%u cols=%u gs=%u: row %u got %.9g want %.9g (double %.9g)\n", rows,
                   cols, gs, r, y[r], yr, exact);
            return 1;
        }
    }
    return 0;
}

int main() {
    int fails = 0;
    const uint32_t gss[] = {32, 64, 128};
    for (uint32_t gs : gss) {
        const uint32_t colss[] = {gs, 3 * gs, 1024};
        for (uint32_t cols : colss) {
            const uint32_t rowss[] = {1, 5, 33};
            for (uint32_t rows : rowss) {
                fails += run_case(rows, cols, gs, false);
                fails += run_case(rows, cols, gs, true);
            }
        }
    }
    if (fails) {
        printf("%d case(s) failed\n", fails);
        return 1;
    }
    printf("gemv_q_tb: all cases passed\n");
    return 0;
}
