/* FerroFX CUDA kernels: the few CUDA words the kernels use, without CUDA headers.
 *
 * The kernels are compiled to PTX by clang's CUDA device-only mode, which needs no CUDA
 * toolkit (scripts/build-ptx.sh), and their per-thread math is also compiled as plain C
 * for the host by the tests (crates/kernel-host). This header gives both passes the same
 * spelling:
 * - FX_HD: a function for both (`__host__ __device__` in CUDA, `static inline` in C);
 * - FX_GLOBAL, FX_SHARED, fx_tid(), fx_bid(), fx_bid_y(), fx_bid_z(), fx_sync(),
 *   fx_shfl_idx(), fx_shfl_up(): device pass only.
 * fmaf is __builtin_fmaf in both (fma for double, __builtin_fma): one rounding, so host
 * and device agree bit for bit.
 */
#ifndef FX_CUDA_H
#define FX_CUDA_H

#if defined(__CUDA__)
#define FX_HD static inline __attribute__((host)) __attribute__((device))
#if defined(__CUDA_ARCH__)
#define FX_GLOBAL extern "C" __attribute__((global))
#define FX_SHARED __attribute__((shared))
#define FX_DEVICE static inline __attribute__((device))
FX_DEVICE unsigned fx_tid(void) { return __nvvm_read_ptx_sreg_tid_x(); }
FX_DEVICE unsigned fx_bid(void) { return __nvvm_read_ptx_sreg_ctaid_x(); }
FX_DEVICE unsigned fx_bid_y(void) { return __nvvm_read_ptx_sreg_ctaid_y(); }
FX_DEVICE unsigned fx_bid_z(void) { return __nvvm_read_ptx_sreg_ctaid_z(); }
FX_DEVICE unsigned fx_ntid(void) { return __nvvm_read_ptx_sreg_ntid_x(); }
FX_DEVICE void fx_sync(void) { __syncthreads(); }
/* Warp shuffles over all 32 lanes (every lane must call them): lane `src`'s `v`, and the
 * `v` of the lane `delta` below (a lane below `delta` gets its own). The last operand is
 * CUDA's `c` for a full-width warp (__shfl_sync, __shfl_up_sync). */
FX_DEVICE float fx_shfl_idx(float v, unsigned src) { return __nvvm_shfl_sync_idx_f32(0xffffffffu, v, (int)src, 0x1f); }
FX_DEVICE float fx_shfl_up(float v, unsigned delta) { return __nvvm_shfl_sync_up_f32(0xffffffffu, v, (int)delta, 0); }
#endif
#else
#define FX_HD static inline
#endif

/* Unroll the next loop fully on the device (the fused scan's fixed-width state stays in
 * registers then); nothing on the host. */
#if defined(__CUDA_ARCH__)
#define FX_UNROLL _Pragma("unroll")
#else
#define FX_UNROLL
#endif

#define fx_fma(a, b, c) __builtin_fmaf((a), (b), (c))
#define fx_dfma(a, b, c) __builtin_fma((a), (b), (c))

typedef struct {
    float x, y;
} fx_vec2;

typedef struct {
    double x, y;
} fx_dvec2;

#endif
