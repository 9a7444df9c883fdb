/* The fused cascade scan (FerroFX; launched by src/gpu/cuda/): a group of up to 8
 * sections of a float32 cascade over a long block, time-parallel over many thread blocks
 * per channel, the samples read twice and written once per group (the per-section scan
 * of sos.cu reads them twice and writes them once per section, on one thread block per
 * channel). Three kernels, launched in order on one stream (src/gpu/fused.rs describes the
 * algorithm and models it; per-thread math in sos_fused_math.h):
 * - ferrofx_sos_fused_ends: grid (tiles, channels), FX_FUSED_TILE threads, one chunk of
 *   chunk_len samples each: the chunk through the group from a zero state, then a
 *   Hillis-Steele scan of the end states across the tile; each chunk's scanned state (its
 *   prefix) into `prefix`.
 * - ferrofx_sos_fused_carry: grid (channels), FX_FUSED_W threads (one per state row):
 *   the tiles' true start states one after another from the block's state, into `carry`.
 * - ferrofx_sos_fused_run: grid (tiles, channels), FX_FUSED_TILE threads: each chunk's
 *   true start state from its tile's and the prefix before it, then the chunk through the
 *   group again, in place; the channel's last chunk leaves the sections' states.
 * The chunks' samples move through shared memory a segment at a time as in sos.cu
 * (fx_seg_load / fx_seg_store), so global memory is read and written in contiguous runs.
 *
 * The same three kernels in double over a caller's float64 rows in place
 * (ferrofx_sos64d_fused_ends, _carry, _run: ferrofx.torch's operator on CUDA tensors,
 * src/gpu/cuda/sos64.rs, opt-in like the float ones): one text, sos_fused_kernels.h,
 * with double samples, states, tables and scratch.
 */
#include "sos_fused_math.h"

#include "fx_prec_float.h"
#define FX_K(name) FX_CAT(ferrofx_sos_fused_, name)
#include "sos_fused_kernels.h"
#undef FX_K
#include "fx_prec_end.h"
#include "fx_prec_double.h"
#define FX_K(name) FX_CAT(ferrofx_sos64d_fused_, name)
#include "sos_fused_kernels.h"
#undef FX_K
#include "fx_prec_end.h"
