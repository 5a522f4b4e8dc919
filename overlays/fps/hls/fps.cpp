// fps.cpp - exact farthest point sampling as a Vitis-HLS kernel (single source).
//
// Semantics equal hetlab/kernels/pointcloud/reference.py::fps bit for bit:
//  * squared distance ((dx*dx) + dy*dy) + dz*dz in float32, no fused multiply-add
//    (build with -ffp-contract=off; Vitis HLS does not fuse float ops into FMA by default);
//  * each step picks the largest distance to the chosen set, ties to the lowest index;
//  * chosen points are never picked again.
//
// Datapath trick: for non-negative IEEE-754 floats the bit pattern orders like the value,
// so distances are kept as 32-bit integer keys: key = bits(dist) + 1 for an unchosen point
// (dist >= +0, +inf allowed) and key = 0 for a chosen one. min() on keys is min() on
// distances, a chosen point stays at 0 forever, and the argmax is an integer compare,
// which closes timing at II=1 where a float compare in the loop-carried max would not.
//
// Structure (mirrored by [[loops]] in ../overlay.toml for the timing model):
//   load   : 3*n words from gmem0 into x/y/z, keys set to "infinity"      PIPELINE II=1
//   sample : n_samples-1 steps, each
//      scan  : ceil(n/FPS_LANES) iterations, FPS_LANES points each       PIPELINE II=1
//      merge : FPS_LANES lane winners -> one (max key, lowest index)      PIPELINE II=1
//   store  : n_samples indices to gmem1 as one burst                      PIPELINE II=1
#include "fps.h"

namespace {

const uint32_t KEY_INF = 0x7f800000u + 1u;  // bits(+inf) + 1

inline uint32_t float_bits(float v) {
    union {
        float f;
        uint32_t u;
    } c;
    c.f = v;
    return c.u;
}

inline float sq_dist(float px, float py, float pz, float qx, float qy, float qz) {
    float dx = qx - px;
    float dy = qy - py;
    float dz = qz - pz;
    float dxx = dx * dx;
    float dyy = dy * dy;
    float dzz = dz * dz;
    float s = dxx + dyy;
    return s + dzz;
}

}  // namespace

extern "C" void fps(const float *points, uint32_t *out, uint32_t n, uint32_t n_samples,
                    uint32_t start) {
#pragma HLS INTERFACE m_axi port = points offset = slave bundle = gmem0 depth = 49152 max_read_burst_length = 16
#pragma HLS INTERFACE m_axi port = out offset = slave bundle = gmem1 depth = 16384 max_write_burst_length = 16
#pragma HLS INTERFACE s_axilite port = points bundle = control
#pragma HLS INTERFACE s_axilite port = out bundle = control
#pragma HLS INTERFACE s_axilite port = n bundle = control
#pragma HLS INTERFACE s_axilite port = n_samples bundle = control
#pragma HLS INTERFACE s_axilite port = start bundle = control
#pragma HLS INTERFACE s_axilite port = return bundle = control

    static float x[FPS_MAX_POINTS];
    static float y[FPS_MAX_POINTS];
    static float z[FPS_MAX_POINTS];
    static uint32_t key[FPS_MAX_POINTS];
    static uint32_t picked[FPS_MAX_POINTS];
#pragma HLS ARRAY_PARTITION variable = x cyclic factor = 4 dim = 1
#pragma HLS ARRAY_PARTITION variable = y cyclic factor = 4 dim = 1
#pragma HLS ARRAY_PARTITION variable = z cyclic factor = 4 dim = 1
#pragma HLS ARRAY_PARTITION variable = key cyclic factor = 4 dim = 1

    if (n == 0 || n > FPS_MAX_POINTS || n_samples == 0 || n_samples > n || start >= n) {
        return;
    }

    // load: one 32-bit word per cycle, component counter instead of a division by 3
    uint32_t i = 0;
    uint32_t comp = 0;
load:
    for (uint32_t w = 0; w < 3 * n; ++w) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 3 max = 49152
        float v = points[w];
        if (comp == 0) {
            x[i] = v;
        } else if (comp == 1) {
            y[i] = v;
        } else {
            z[i] = v;
            key[i] = KEY_INF;
        }
        if (comp == 2) {
            comp = 0;
            ++i;
        } else {
            ++comp;
        }
    }

    uint32_t last = start;
    picked[0] = last;
sample:
    for (uint32_t s = 1; s < n_samples; ++s) {
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 16383
        const float px = x[last];
        const float py = y[last];
        const float pz = z[last];
        key[last] = 0;  // chosen: never again (min() keeps it at 0)

        uint32_t lane_key[FPS_LANES];
        uint32_t lane_idx[FPS_LANES];
#pragma HLS ARRAY_PARTITION variable = lane_key complete
#pragma HLS ARRAY_PARTITION variable = lane_idx complete
        for (uint32_t l = 0; l < FPS_LANES; ++l) {
#pragma HLS UNROLL
            lane_key[l] = 0;
            lane_idx[l] = 0;
        }

    scan:
        for (uint32_t base = 0; base < n; base += FPS_LANES) {
#pragma HLS PIPELINE II = 1
#pragma HLS DEPENDENCE variable = key inter false
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 4096
            for (uint32_t l = 0; l < FPS_LANES; ++l) {
#pragma HLS UNROLL
                const uint32_t j = base + l;
                if (j < n) {
                    const uint32_t d = float_bits(sq_dist(px, py, pz, x[j], y[j], z[j])) + 1u;
                    const uint32_t k = key[j] < d ? key[j] : d;
                    key[j] = k;
                    // strict '>' keeps the lowest index within a lane (indices ascend)
                    if (k > lane_key[l]) {
                        lane_key[l] = k;
                        lane_idx[l] = j;
                    }
                }
            }
        }

        // merge lanes: largest key, lowest index on ties (lane winners are distinct indices)
        uint32_t best_key = 0;
        uint32_t best_idx = 0;
        bool have = false;
    merge:
        for (uint32_t l = 0; l < FPS_LANES; ++l) {
#pragma HLS PIPELINE II = 1
            const bool valid = lane_key[l] != 0;
            const bool better = lane_key[l] > best_key ||
                                (lane_key[l] == best_key && lane_idx[l] < best_idx);
            if (valid && (!have || better)) {
                best_key = lane_key[l];
                best_idx = lane_idx[l];
                have = true;
            }
        }
        last = best_idx;
        picked[s] = last;
    }

store:
    for (uint32_t s = 0; s < n_samples; ++s) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 16384
        out[s] = picked[s];
    }
}
