// fps_tb.cpp - C-simulation testbench for fps() (Vitis HLS csim_design, or plain g++).
//
// Compares the kernel against a deliberately naive float reference written the way
// reference.py is (distance array, -1 for chosen, first maximum wins) on random clouds,
// clouds on a tiny integer grid (ties and duplicates), n = 1, n_samples = n and sizes that
// are not a multiple of FPS_LANES. Exit status 0 when every case matches.
//
//   g++ -std=c++14 -O2 -ffp-contract=off -Wno-unknown-pragmas fps.cpp fps_tb.cpp -o fps_tb
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "fps.h"

static void reference(const std::vector<float> &p, uint32_t n, uint32_t ns, uint32_t start,
                      std::vector<uint32_t> &out) {
    std::vector<float> dist(n, __builtin_inff());
    uint32_t last = start;
    out[0] = last;
    for (uint32_t s = 1; s < ns; ++s) {
        for (uint32_t j = 0; j < n; ++j) {
            float dx = p[3 * j] - p[3 * last];
            float dy = p[3 * j + 1] - p[3 * last + 1];
            float dz = p[3 * j + 2] - p[3 * last + 2];
            float dxx = dx * dx, dyy = dy * dy, dzz = dz * dz;
            float d = (dxx + dyy) + dzz;
            if (d < dist[j]) dist[j] = d;
        }
        dist[last] = -1.0f;
        uint32_t best = 0;
        for (uint32_t j = 1; j < n; ++j)
            if (dist[j] > dist[best]) best = j;
        last = best;
        out[s] = last;
    }
}

static uint32_t lcg_state = 12345u;
static uint32_t lcg() {
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lcg_state >> 8;
}

static int run_case(uint32_t n, uint32_t ns, uint32_t start, bool grid) {
    std::vector<float> p(3 * n);
    for (uint32_t k = 0; k < 3 * n; ++k)
        p[k] = grid ? (float)(int)(lcg() % 5) - 2.0f : (float)(lcg() % 1000000) / 1000.0f;
    std::vector<uint32_t> got(ns, 0xffffffffu), want(ns, 0);
    fps(p.data(), got.data(), n, ns, start);
    reference(p, n, ns, start, want);
    for (uint32_t s = 0; s < ns; ++s) {
        if (got[s] != want[s]) {
            printf("FAIL n=%u n_samples=%u start=%u grid=%d: step %u got %u want %u\n", n, ns,
                   start, (int)grid, s, got[s], want[s]);
            return 1;
        }
    }
    return 0;
}

int main() {
    int fails = 0;
    const uint32_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 31, 64, 257, 1000};
    for (uint32_t n : sizes) {
        for (int grid = 0; grid < 2; ++grid) {
            fails += run_case(n, n, 0, grid);                        // n_samples = n
            fails += run_case(n, (n + 1) / 2, n - 1, grid);          // last index as start
            fails += run_case(n, 1, n / 2, grid);                    // one sample
        }
    }
    if (fails) {
        printf("%d case(s) failed\n", fails);
        return 1;
    }
    printf("fps_tb: all cases passed\n");
    return 0;
}
