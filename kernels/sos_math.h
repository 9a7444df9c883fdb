/* Per-thread math of the SOS kernels (sos.cu), shared with the host tests.
 *
 * Each section runs in the delta state-space form of src/gpu/realize.rs, which keeps
 * float32 accurate for poles near z = 1:
 *     y = c.s + d*x;   s <- s + (A - I) s + b*x
 * in exactly the operation order of realize.rs's `step`/`advance` (and the WGSL shader),
 * so the CUDA path and the CPU model round identically (the wgpu path too where the
 * adapter fuses its fma; lavapipe does not, and lands within ~4e-7 of the peak).
 */
#ifndef FX_SOS_MATH_H
#define FX_SOS_MATH_H
#include "fx_cuda.h"

/* Chunks of the time-parallel scan (one thread each) and its steps, log2 of that:
 * realize.rs's MAX_CHUNKS and SCAN_STEPS. */
#define FX_SOS_THREADS 256
#define FX_SCAN_STEPS 8

/* One section as realize.rs's DeltaSection lays it out (12 floats). */
typedef struct {
    float delta[4]; /* A - I, row-major */
    float b[2];
    float c[2];
    float d;
    float pad[3];
} fx_section;

/* One launch's view of one chain stage (a cascade of sections). */
typedef struct {
    unsigned frames;     /* samples per channel in this job */
    unsigned chunk_len;  /* samples per chunk (scan) */
    unsigned chunks;     /* chunks (scan); 1: sequential */
    unsigned stride;     /* planar channel stride of `work` */
    unsigned first;      /* this stage's first section in `sections` / `tables` */
    unsigned count;      /* sections in this stage */
    unsigned state_base; /* this stage's first state: [channel][section] from here */
    unsigned channels;
} fx_sos_params;

/* One section in double precision (the float64 kernels, sos64.cu): 12 doubles, as
 * realize.rs's DeltaSection<f64> lays it out. */
typedef struct {
    double delta[4];
    double b[2];
    double c[2];
    double d;
    double pad[3];
} fx_section64;

/* The scan kernel's staging of chunk segments through shared memory. Thread j runs
 * chunk j, whose samples lie chunk_len apart from its neighbours': read sample by sample,
 * one warp's load touches 32 scattered words (32 memory transactions for 128 bytes). So
 * the kernel moves FX_SEG samples of each chunk at a time through a row of shared memory
 * per thread, and a warp fills its 32 rows together: in round i (of 16), lanes 0-15 move
 * 16 consecutive samples of the warp's chunk 2i, lanes 16-31 those of chunk 2i+1, two
 * contiguous 64-byte runs per instruction. Rows are FX_ROW floats apart (17: no two
 * lanes of a warp read the same bank when each walks its own row). Samples outside a
 * chunk or the block are read as 0 and never written back. The arithmetic on the rows is
 * fx_sos_step's, sample by sample in order, as in fx_chunk_run. */
#define FX_SEG 16
#define FX_ROW 17

/* Where row-slot `k` of round `i` for `lane` of a warp whose first chunk is `first`
 * lies: the block index of the sample (or frames when outside), and the slot in the
 * warp's rows. */
FX_HD unsigned fx_seg_index(const fx_sos_params* p, unsigned first, unsigned lane, unsigned round, unsigned seg, unsigned* slot) {
    unsigned row = 2 * round + (lane >> 4);
    unsigned e = lane & 15;
    unsigned pos = seg * FX_SEG + e;
    unsigned n = (first + row) * p->chunk_len + pos;
    *slot = row * FX_ROW + e;
    return (pos < p->chunk_len && n < p->frames) ? n : p->frames;
}

/* Samples of segment `seg` in a chunk of `len` samples (0 past its end). */
FX_HD unsigned fx_seg_len(unsigned len, unsigned seg) {
    unsigned done = seg * FX_SEG;
    return len > done ? (len - done < FX_SEG ? len - done : FX_SEG) : 0;
}

/* The per-sample arithmetic in float (fx_sos_step, fx_advance, ...) and in double
 * (fx_sos_step64, fx_advance64, ...), and the segment staging (fx_seg_load, fx_seg_load64,
 * ...): one text, sos_step.h. */
#define FX_CAT_(a, b) a##b
#define FX_CAT(a, b) FX_CAT_(a, b)
#include "fx_prec_float.h"
#include "sos_step.h"
#include "fx_prec_end.h"
#include "fx_prec_double.h"
#include "sos_step.h"
#include "fx_prec_end.h"

/* Samples a chunk pass reads (and writes) at a time: the loads of a batch are independent
 * of the recursion, so they issue together and their latency is paid once per batch
 * instead of once per sample (a store to the buffer also evicts the line from the GPU's L1,
 * so sample-by-sample in-place passes paid an L2 round trip per sample). The arithmetic is
 * fx_sos_step's, sample by sample, in order: batching changes no rounding. */
#define FX_BATCH 16

/* x[n..n + FX_BATCH) into registers, the loads issued together. */
FX_HD void fx_batch_load(float* v, const float* x, unsigned n) {
    for (unsigned k = 0; k < FX_BATCH; k++) {
        v[k] = x[n + k];
    }
}

/* Pass 1: the end state of x[start..end) from state s. The section is copied into
 * registers first (its coefficients are reloaded otherwise: `x` might alias them). */
FX_HD fx_vec2 fx_chunk_end(const fx_section* sec_in, fx_vec2 s, const float* x, unsigned start, unsigned end) {
    const fx_section sec = *sec_in;
    unsigned n = start;
    for (; n + FX_BATCH <= end; n += FX_BATCH) {
        float v[FX_BATCH];
        fx_batch_load(v, x, n);
        s = fx_samples_end(&sec, s, v, FX_BATCH);
    }
    return fx_samples_end(&sec, s, x + n, end - n);
}

/* Pass 3 (and the sequential path): x[start..end) in place from state s; returns the end state. */
FX_HD fx_vec2 fx_chunk_run(const fx_section* sec_in, fx_vec2 s, float* x, unsigned start, unsigned end) {
    const fx_section sec = *sec_in;
    unsigned n = start;
    for (; n + FX_BATCH <= end; n += FX_BATCH) {
        float v[FX_BATCH];
        fx_batch_load(v, x, n);
        s = fx_samples_run(&sec, s, v, FX_BATCH);
        for (unsigned k = 0; k < FX_BATCH; k++) {
            x[n + k] = v[k];
        }
    }
    return fx_samples_run(&sec, s, x + n, end - n);
}

/* The float64 kernels (sos64.cu): a cascade's samples move into double once (fx_widen),
 * every section runs on them in double, and they are rounded to float once at the
 * cascade's end (fx_narrow), as realize.rs's run_cascade::<f64>. */
FX_HD void fx_widen(const float* x, double* w, unsigned start, unsigned end) {
    for (unsigned n = start; n < end; n++) {
        w[n] = (double)x[n];
    }
}

FX_HD void fx_narrow(const double* w, float* x, unsigned start, unsigned end) {
    for (unsigned n = start; n < end; n++) {
        x[n] = (float)w[n];
    }
}

#endif
