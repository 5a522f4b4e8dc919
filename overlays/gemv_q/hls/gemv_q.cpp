// gemv_q.cpp - W4A16 GEMV y = dequant(W) @ x as a Vitis-HLS kernel (single source).
//
// Weights are hetlab QuantizedMatrix codes (bits=4): w = (q - z) * s per group, q the 4-bit
// code, z the group's zero point and s its scale (both float16). The kernel never expands
// W: it streams packed words once.
//
// Integer path (bit-exact): q is cut from the word by shifts and masks, (float)q - z is
// exact in float32 (both integers, |q - z| < 2**11).
//
// Float path (fixed order, float32, round-to-nearest, no fused multiply-add: built with
// -ffp-contract=off here and `config_op fmadd -impl none` in Vitis HLS), per row:
//   p_k   = ((float)q_k - z_g) * x_k                          for the 8 codes of word w
//   t_w   = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7))  adder tree of word w
//   a_l   = ((0 + t_l) + t_{l+4}) + t_{l+8} + ...            GQ_LANES=4 lanes over the
//                                                              group's words, w = l mod 4
//   G_g   = (a_0 + a_1) + (a_2 + a_3)                          group sum
//   y     = ((0 + G_0*s_0) + G_1*s_1) + ...                   groups in order
// hetlab.kernels.quant.fpga.gemv_q_f32 computes exactly this in NumPy float32 (tests: bit-exact).
//
// Structure (mirrored by [[loops]] in ../overlay.toml for the timing model):
//   load_x : cols floats from gmem3 into the on-chip x buffer            PIPELINE II=1
//   rows   : for every row
//     params : its ng scales and zero points (float16 -> float32)        PIPELINE II=1
//     words  : its cols/8 packed words, 8 codes per cycle                 PIPELINE II=1
//     scale  : y = y + G_g * s_g over its ng groups (carried float add)  PIPELINE II=4
//   store  : rows floats to gmem4 as one burst                            PIPELINE II=1
#include "gemv_q.h"

namespace {

inline float bits_float(uint32_t u) {
    union {
        uint32_t u;
        float f;
    } c;
    c.u = u;
    return c.f;
}

// IEEE half -> float, exact for every input (normals, subnormals, zeros, inf, NaN).
inline float half_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h >> 15) << 31;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) {
        return bits_float(sign | 0x7f800000u | (man << 13));
    }
    if (exp != 0) {
        return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
    }
    if (man == 0) {
        return bits_float(sign);
    }
    // subnormal half: normalize with a fixed-trip priority encoder (no data-dependent loop)
    uint32_t e = 113u;  // 127 - 15 + 1
norm:
    for (int i = 0; i < 10; ++i) {
#pragma HLS UNROLL
        if (!(man & 0x400u)) {
            man <<= 1;
            --e;
        }
    }
    return bits_float(sign | (e << 23) | ((man & 0x3ffu) << 13));
}

}  // namespace

extern "C" void gemv_q(const uint32_t *qweight, const uint16_t *scales, const uint16_t *zeros,
                       const float *x, float *y, uint32_t rows, uint32_t cols,
                       uint32_t group_size) {
#pragma HLS INTERFACE m_axi port = qweight offset = slave bundle = gmem0 depth = 16777216 max_read_burst_length = 16
#pragma HLS INTERFACE m_axi port = scales offset = slave bundle = gmem1 depth = 4194304 max_read_burst_length = 16
#pragma HLS INTERFACE m_axi port = zeros offset = slave bundle = gmem2 depth = 4194304 max_read_burst_length = 16
#pragma HLS INTERFACE m_axi port = x offset = slave bundle = gmem3 depth = 8192 max_read_burst_length = 16
#pragma HLS INTERFACE m_axi port = y offset = slave bundle = gmem4 depth = 16384 max_write_burst_length = 16
#pragma HLS INTERFACE s_axilite port = qweight bundle = control
#pragma HLS INTERFACE s_axilite port = scales bundle = control
#pragma HLS INTERFACE s_axilite port = zeros bundle = control
#pragma HLS INTERFACE s_axilite port = x bundle = control
#pragma HLS INTERFACE s_axilite port = y bundle = control
#pragma HLS INTERFACE s_axilite port = rows bundle = control
#pragma HLS INTERFACE s_axilite port = cols bundle = control
#pragma HLS INTERFACE s_axilite port = group_size bundle = control
#pragma HLS INTERFACE s_axilite port = return bundle = control

    static float xb[GQ_MAX_COLS];
    static float yb[GQ_MAX_ROWS];
    static float sb[GQ_MAX_COLS / 32];
    static float zb[GQ_MAX_COLS / 32];
    static float gsum[GQ_MAX_COLS / 32];
#pragma HLS ARRAY_PARTITION variable = xb cyclic factor = 8 dim = 1

    if (rows == 0 || rows > GQ_MAX_ROWS || cols == 0 || cols > GQ_MAX_COLS ||
        group_size == 0 || group_size % 32 != 0 || cols % group_size != 0) {
        return;
    }
    const uint32_t ng = cols / group_size;
    const uint32_t wpg = group_size / GQ_CODES;  // words per group, a multiple of GQ_LANES
    const uint32_t wpr = cols / GQ_CODES;        // words per row

load_x:
    for (uint32_t j = 0; j < cols; ++j) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 32 max = 8192
        xb[j] = x[j];
    }

rows:
    for (uint32_t r = 0; r < rows; ++r) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 16384
    params:
        for (uint32_t g = 0; g < ng; ++g) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 256
            sb[g] = half_to_float(scales[r * ng + g]);
            zb[g] = half_to_float(zeros[r * ng + g]);
        }

        float acc[GQ_LANES];
#pragma HLS ARRAY_PARTITION variable = acc complete
        uint32_t g = 0;   // group of word w
        uint32_t wi = 0;  // word index inside the group
    words:
        for (uint32_t w = 0; w < wpr; ++w) {
#pragma HLS PIPELINE II = 1
#pragma HLS DEPENDENCE variable = acc inter distance = 4 true
#pragma HLS LOOP_TRIPCOUNT min = 4 max = 1024
            const uint32_t word = qweight[r * wpr + w];
            const float zf = zb[g];
            float p[GQ_CODES];
#pragma HLS ARRAY_PARTITION variable = p complete
            for (uint32_t k = 0; k < GQ_CODES; ++k) {
#pragma HLS UNROLL
                const uint32_t q = (word >> (4 * k)) & 0xfu;
                p[k] = ((float)q - zf) * xb[w * GQ_CODES + k];
            }
            const float t = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
            const uint32_t lane = wi % GQ_LANES;
            acc[lane] = (wi < GQ_LANES ? 0.0f : acc[lane]) + t;
            if (wi == wpg - 1) {
                gsum[g] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
                wi = 0;
                ++g;
            } else {
                ++wi;
            }
        }

        float yacc = 0.0f;
    scale:
        for (uint32_t gg = 0; gg < ng; ++gg) {
#pragma HLS PIPELINE II = 4
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 256
            const float c = gsum[gg] * sb[gg];
            yacc = yacc + c;
        }
        yb[r] = yacc;
    }

store:
    for (uint32_t r = 0; r < rows; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 16384
        y[r] = yb[r];
    }
}
