// gemv_q.h - W4A16 GEMV overlay: compile-time limits and the top-level function.
//
// Shared by Vitis HLS and hetlab's emulator (g++ -> shared library -> ctypes).
// Keep the limits equal to [limits] in ../overlay.toml (tests/test_fpga_gemv_q.py checks).
#ifndef HETLAB_GEMV_Q_H
#define HETLAB_GEMV_Q_H

#include <stdint.h>

// Longest (padded) row: x is held on chip, GQ_CODES floats read per cycle.
#define GQ_MAX_COLS 8192
// Most rows per call: y is held on chip and stored as one burst at the end.
#define GQ_MAX_ROWS 16384
// 4-bit codes per 32-bit word (the multiply-add tree width of the words loop).
#define GQ_CODES 8
// Interleaved group accumulators (hide the float adder's latency at II=1).
#define GQ_LANES 4

extern "C" {
// qweight: rows * cols/8 uint32 words, hetlab's QuantizedMatrix layout (bits=4): group g of
//          row r is words [r*cols/8 + g*group_size/8, ... + group_size/8), code k of a group in
//          word k/8, bits [4*(k%8), 4*(k%8)+4), least-significant first.       (gmem0)
// scales:  rows * (cols/group_size) float16 bit patterns, row-major.           (gmem1)
// zeros:   same shape, float16 integer-valued zero points (8.0 when symmetric). (gmem2)
// x:       cols float32 (zero-padded to cols).                                 (gmem3)
// y:       rows float32 out.                                                   (gmem4)
// A call with rows == 0 or > GQ_MAX_ROWS, cols == 0 or > GQ_MAX_COLS, group_size not a
// positive multiple of 32 or cols not a multiple of group_size writes nothing.
void gemv_q(const uint32_t *qweight, const uint16_t *scales, const uint16_t *zeros,
            const float *x, float *y, uint32_t rows, uint32_t cols, uint32_t group_size);
}

#endif
