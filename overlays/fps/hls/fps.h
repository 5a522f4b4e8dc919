// fps.h - farthest point sampling overlay: compile-time limits and the top-level function.
//
// The same header is used by Vitis HLS (synthesis, C-simulation) and by hetlab's emulator,
// which builds fps.cpp with g++ into a shared library and calls fps() through ctypes.
// Keep FPS_MAX_POINTS and FPS_LANES equal to [limits] in ../overlay.toml (a test checks).
#ifndef HETLAB_FPS_H
#define HETLAB_FPS_H

#include <stdint.h>

// On-chip buffer size in points (x, y, z and the distance key each take one 32-bit word).
#define FPS_MAX_POINTS 16384
// Parallel distance lanes of the scan loop (unroll factor = cyclic partition factor).
#define FPS_LANES 4

extern "C" {
// points: n*3 float32 (x0 y0 z0 x1 ...), read through m_axi port gmem0.
// out:    n_samples uint32 indices in pick order, written through m_axi port gmem1.
// Returns nothing; a call with n == 0, n > FPS_MAX_POINTS, n_samples == 0,
// n_samples > n or start >= n writes nothing (the driver validates first).
void fps(const float *points, uint32_t *out, uint32_t n, uint32_t n_samples, uint32_t start);
}

#endif
