//! The CUDA kernels (`kernels/*.cu`) run on the host: their per-thread math (the headers
//! `kernels/sos_math.h` and `kernels/fir_math.h`, the very code the device runs) compiled
//! by the system C compiler, driven thread by thread between the kernels' barriers by
//! `src/host.c`. CI has no GPU; this is how it checks the kernels' arithmetic (against
//! the CPU model in `ferrofx::gpu::realize` and the CPU engine, `tests/`).
//!
//! The structs mirror the kernels' parameter records (`#[repr(C)]`, the same fields).

/// `fx_section` (sos_math.h): one section in the delta form, as
/// `ferrofx::gpu::realize::DeltaSection::words` lays it out.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct Section(pub [f32; 12]);

/// `fx_section64` (sos_math.h): one section in double precision, as
/// `ferrofx::gpu::realize::DeltaSection::<f64>::words` lays it out.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct Section64(pub [f64; 12]);

/// `fx_sos_params` (sos_math.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SosParams {
    pub frames: u32,
    pub chunk_len: u32,
    pub chunks: u32,
    pub stride: u32,
    pub first: u32,
    pub count: u32,
    pub state_base: u32,
    pub channels: u32,
}

/// `fx_fused_params` (sos_fused_math.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct FusedParams {
    pub frames: u32,
    pub chunk_len: u32,
    pub chunks: u32,
    pub tiles: u32,
    pub stride: u32,
    pub first: u32,
    pub count: u32,
    pub state_base: u32,
    pub state_stride: u32,
    pub table_base: u32,
    pub channels: u32,
    pub pad: u32,
}

/// `fx_pipe_params` (sos_pipe_math.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct PipeParams {
    pub frames: u32,
    pub stride: u32,
    pub channels: u32,
    pub lanes: u32,
    pub lane_base: u32,
    pub pad: [u32; 3],
}

/// Lanes of the warp pipeline (`FX_PIPE_LANES`): the most sections one launch runs.
pub const PIPE_LANES: usize = 32;

/// `fx_fir_params` (fir_math.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct FirParams {
    pub frames: u32,
    pub taps: u32,
    pub stride: u32,
    pub tap_base: u32,
    pub hist_base: u32,
    pub channels: u32,
    pub pad0: u32,
    pub pad1: u32,
}

/// `fx_fft_params` (fft_math.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct FftParams {
    pub n: u32,
    pub half_span: u32,
    pub r: u32,
    pub tw_scale: u32,
    pub part: u32,
    pub pcount: u32,
    pub segs: u32,
    pub outs: u32,
    pub taps: u32,
    pub frames: u32,
    pub stride: u32,
    pub hist_base: u32,
    pub kernel_base: u32,
    pub channels: u32,
    pub pad0: u32,
    pub pad1: u32,
}

/// `fx_rows_params` (convert_math.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct RowsParams {
    pub src_stride: u32,
    pub src_at: u32,
    pub dst_stride: u32,
    pub dst_at: u32,
    pub rows: u32,
    pub n: u32,
    pub pad0: u32,
    pub pad1: u32,
}

/// `fx_adjoint_params` (adjoint_math.h).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct AdjointParams {
    pub total: u64,
    pub row_len: u32,
    pub pad0: u32,
    pub b0: f64,
    pub b1: f64,
    pub b2: f64,
}

/// Threads per block of the adjoint step kernel (`FX_ADJ_THREADS`).
pub const ADJ_THREADS: usize = 256;

/// Threads per block of the row-copy kernels (`FX_ROWS_THREADS`).
pub const ROWS_THREADS: usize = 256;

/// Threads per block of the scan kernel (`FX_SOS_THREADS`): the most chunks.
pub const SOS_THREADS: usize = 256;
/// Scan steps (`FX_SCAN_STEPS`).
pub const SCAN_STEPS: usize = 8;

extern "C" {
    fn fx_host_sos_channels(p: SosParams, work: *mut f32, sections: *const Section, states: *mut [f32; 2]);
    fn fx_host_sos_scan(p: SosParams, work: *mut f32, sections: *const Section, tables: *const f32, states: *mut [f32; 2]);
    fn fx_host_sos_fused(p: FusedParams, work: *mut f32, sections: *const Section, tables: *const f32, prefix: *mut f32, carry: *mut f32, states: *mut [f32; 2]);
    fn fx_host_sos64d_fused(p: FusedParams, work: *mut f64, sections: *const Section64, tables: *const f64, prefix: *mut f64, carry: *mut f64, states: *mut [f64; 2]);
    fn fx_host_sos_pipe(p: PipeParams, work: *mut f32, sections: *const Section, lanes: *const [u32; 4], states: *mut [f32; 2]);
    fn fx_host_sos64_channels(p: SosParams, work: *mut f32, wide: *mut f64, sections: *const Section64, states: *mut [f64; 2]);
    fn fx_host_sos64_scan(p: SosParams, work: *mut f32, wide: *mut f64, sections: *const Section64, tables: *const f64, states: *mut [f64; 2]);
    fn fx_host_sos64d_channels(p: SosParams, work: *mut f64, sections: *const Section64, states: *mut [f64; 2]);
    fn fx_host_sos64d_scan(p: SosParams, work: *mut f64, sections: *const Section64, tables: *const f64, states: *mut [f64; 2]);
    fn fx_host_sos64d_taps_channels(p: SosParams, input: *const f64, outs: *mut f64, out_step: u64, sections: *const Section64, states: *mut [f64; 2]);
    fn fx_host_sos64d_taps_scan(p: SosParams, input: *const f64, outs: *mut f64, out_step: u64, sections: *const Section64, tables: *const f64, states: *mut [f64; 2]);
    fn fx_host_adjoint_step64(p: AdjointParams, blocks: u32, lam: *const f64, xs: *const f64, ys: *const f64, g: *mut f64, partial: *mut f64);
    fn fx_host_rows_convert(p: RowsParams, grid_x: u32, grid_y: u32, to_f32: i32, src: *const std::ffi::c_void, dst: *mut std::ffi::c_void);
    fn fx_host_fir_direct(p: FirParams, work: *const f32, taps: *const f32, history: *const f32, out: *mut f32);
    fn fx_host_fir_history(p: FirParams, work: *const f32, history: *const f32, hist_out: *mut f32);
    #[allow(clippy::too_many_arguments)]
    fn fx_host_fft_fir(
        p: FftParams,
        log2n: u32,
        work: *const f32,
        history: *const f32,
        kernel: *const [f32; 2],
        tw: *const [f32; 2],
        a: *mut [f32; 2],
        b: *mut [f32; 2],
        out: *mut f32,
    );
}

fn check_sos(p: &SosParams, work: usize, sections: usize, states: usize) {
    assert!(p.channels as usize * p.stride as usize <= work && p.frames <= p.stride, "work buffer too short for {p:?}");
    assert!((p.first + p.count) as usize <= sections, "sections too short for {p:?}");
    assert!(p.state_base as usize + (p.channels * p.count) as usize <= states, "states too short for {p:?}");
}

/// `ferrofx_sos_channels` over `work` (planar, `stride` apart), in place.
pub fn sos_channels(p: SosParams, work: &mut [f32], sections: &[Section], states: &mut [[f32; 2]]) {
    check_sos(&p, work.len(), sections.len(), states.len());
    // SAFETY: the lengths were checked against every index the C code forms from `p`.
    unsafe { fx_host_sos_channels(p, work.as_mut_ptr(), sections.as_ptr(), states.as_mut_ptr()) }
}

/// `ferrofx_sos_scan` over `work`, in place; `tables` holds `SCAN_STEPS` 2x2 entries per
/// section (`Realization::scan_table`).
pub fn sos_scan(p: SosParams, work: &mut [f32], sections: &[Section], tables: &[[f32; 4]], states: &mut [[f32; 2]]) {
    check_sos(&p, work.len(), sections.len(), states.len());
    assert!(tables.len() >= (p.first + p.count) as usize * SCAN_STEPS, "tables too short");
    assert!(p.chunks as usize <= SOS_THREADS && (p.chunks * p.chunk_len) as usize >= p.frames as usize, "chunking {p:?}");
    // SAFETY: as above; tables hold SCAN_STEPS entries for every section indexed.
    unsafe { fx_host_sos_scan(p, work.as_mut_ptr(), sections.as_ptr(), tables.as_ptr().cast(), states.as_mut_ptr()) }
}

/// The fused scan's buffers checked against every index the kernels form from `p`
/// (`work`, `sections`, `tables`, `states`: lengths in elements); returns the scratch
/// buffers' lengths (`prefix`, `carry`).
fn check_fused(p: &FusedParams, work: usize, sections: usize, tables: usize, states: usize) -> (usize, usize) {
    const WIDTH: usize = 16;
    const TILE: usize = 256;
    assert!(p.channels as usize * p.stride as usize <= work && p.frames <= p.stride && p.frames > 0, "work buffer for {p:?}");
    assert!(p.chunk_len > 0 && p.chunks == p.frames.div_ceil(p.chunk_len) && p.tiles as usize == (p.chunks as usize).div_ceil(TILE), "chunking {p:?}");
    assert!((1..=8).contains(&p.count) && (p.first + p.count) as usize <= sections, "sections for {p:?}");
    assert!(p.table_base as usize + 9 * WIDTH * WIDTH <= tables, "tables for {p:?}");
    assert!(p.count <= p.state_stride && p.state_base as usize + (p.channels as usize - 1) * p.state_stride as usize + p.count as usize <= states, "states for {p:?}");
    (p.channels as usize * WIDTH * p.chunks as usize, p.channels as usize * p.tiles as usize * WIDTH)
}

/// The fused scan's three kernels (sos_fused.cu: `ferrofx_sos_fused_ends`, `_carry`,
/// `_run`) in launch order over `work`, in place: one group of `p.count` sections from
/// `p.first`, its tables (`FUSED_TABLE_FLOATS` floats, `ferrofx::gpu::fused`) from
/// `p.table_base` in `tables`, its states from `p.state_base`, `p.state_stride` apart per
/// channel. The scratch buffers are allocated here, filled with NaN (a value the kernels
/// read before writing would show).
pub fn sos_fused(p: FusedParams, work: &mut [f32], sections: &[Section], tables: &[f32], states: &mut [[f32; 2]]) {
    let (prefix, carry) = check_fused(&p, work.len(), sections.len(), tables.len(), states.len());
    let (mut prefix, mut carry) = (vec![f32::NAN; prefix], vec![f32::NAN; carry]);
    // SAFETY: every index the C code forms from `p` was checked above against the
    // buffers' lengths; the scratch buffers have the sizes its comment names.
    unsafe { fx_host_sos_fused(p, work.as_mut_ptr(), sections.as_ptr(), tables.as_ptr(), prefix.as_mut_ptr(), carry.as_mut_ptr(), states.as_mut_ptr()) }
}

/// The same three kernels in double over float64 rows in place (sos_fused.cu's
/// `ferrofx_sos64d_fused_ends`, `_carry`, `_run`): double sections, tables, states and
/// scratch (NaN-filled here).
pub fn sos64d_fused(p: FusedParams, work: &mut [f64], sections: &[Section64], tables: &[f64], states: &mut [[f64; 2]]) {
    let (prefix, carry) = check_fused(&p, work.len(), sections.len(), tables.len(), states.len());
    let (mut prefix, mut carry) = (vec![f64::NAN; prefix], vec![f64::NAN; carry]);
    // SAFETY: as in `sos_fused`, in double.
    unsafe { fx_host_sos64d_fused(p, work.as_mut_ptr(), sections.as_ptr(), tables.as_ptr(), prefix.as_mut_ptr(), carry.as_mut_ptr(), states.as_mut_ptr()) }
}

/// `ferrofx_sos_pipe` (sos_pipe.cu) over `work` in place: lanes `p.lane_base..` of
/// `lanes` (`[section, state, count, pad]`, `ferrofx::gpu::pipe::PipeLane::words`), each
/// one section of the run, one warp per channel.
pub fn sos_pipe(p: PipeParams, work: &mut [f32], sections: &[Section], lanes: &[[u32; 4]], states: &mut [[f32; 2]]) {
    assert!(p.channels > 0 && p.channels as usize * p.stride as usize <= work.len() && p.frames <= p.stride, "work buffer for {p:?}");
    assert!((1..=PIPE_LANES as u32).contains(&p.lanes) && (p.lane_base + p.lanes) as usize <= lanes.len(), "lanes for {p:?}");
    for l in &lanes[p.lane_base as usize..(p.lane_base + p.lanes) as usize] {
        assert!((l[0] as usize) < sections.len(), "lane {l:?}: no such section");
        assert!(l[1] as usize + (p.channels as usize - 1) * (l[2] as usize) < states.len(), "lane {l:?}: states for {p:?}");
    }
    // SAFETY: every index the C code forms from `p` and the lanes it reads was checked
    // above against the buffers' lengths.
    unsafe { fx_host_sos_pipe(p, work.as_mut_ptr(), sections.as_ptr(), lanes.as_ptr(), states.as_mut_ptr()) }
}

/// `ferrofx_sos64_channels` (sos64.cu) over `work` in place: the cascade in double, its
/// samples in `wide` (as long as `work`) between the sections.
pub fn sos64_channels(p: SosParams, work: &mut [f32], sections: &[Section64], states: &mut [[f64; 2]]) {
    check_sos(&p, work.len(), sections.len(), states.len());
    let mut wide = vec![f64::NAN; work.len()];
    // SAFETY: the lengths were checked against every index the C code forms from `p`;
    // `wide` is as long as `work` and indexed alike.
    unsafe { fx_host_sos64_channels(p, work.as_mut_ptr(), wide.as_mut_ptr(), sections.as_ptr(), states.as_mut_ptr()) }
}

/// `ferrofx_sos64_scan` (sos64.cu) over `work` in place.
pub fn sos64_scan(p: SosParams, work: &mut [f32], sections: &[Section64], tables: &[[f64; 4]], states: &mut [[f64; 2]]) {
    check_sos(&p, work.len(), sections.len(), states.len());
    assert!(tables.len() >= (p.first + p.count) as usize * SCAN_STEPS, "tables too short");
    assert!(p.chunks as usize <= SOS_THREADS && (p.chunks * p.chunk_len) as usize >= p.frames as usize, "chunking {p:?}");
    let mut wide = vec![f64::NAN; work.len()];
    // SAFETY: as above; tables hold SCAN_STEPS entries for every section indexed.
    unsafe { fx_host_sos64_scan(p, work.as_mut_ptr(), wide.as_mut_ptr(), sections.as_ptr(), tables.as_ptr().cast(), states.as_mut_ptr()) }
}

/// `ferrofx_sos64d_channels` (sos64.cu): the float64 cascade over double samples in place.
pub fn sos64d_channels(p: SosParams, work: &mut [f64], sections: &[Section64], states: &mut [[f64; 2]]) {
    check_sos(&p, work.len(), sections.len(), states.len());
    // SAFETY: the lengths were checked against every index the C code forms from `p`.
    unsafe { fx_host_sos64d_channels(p, work.as_mut_ptr(), sections.as_ptr(), states.as_mut_ptr()) }
}

/// `ferrofx_sos64d_scan` (sos64.cu) over double samples in place.
pub fn sos64d_scan(p: SosParams, work: &mut [f64], sections: &[Section64], tables: &[[f64; 4]], states: &mut [[f64; 2]]) {
    check_sos(&p, work.len(), sections.len(), states.len());
    assert!(tables.len() >= (p.first + p.count) as usize * SCAN_STEPS, "tables too short");
    assert!(p.chunks as usize <= SOS_THREADS && (p.chunks * p.chunk_len) as usize >= p.frames as usize, "chunking {p:?}");
    // SAFETY: as above; tables hold SCAN_STEPS entries for every section indexed.
    unsafe { fx_host_sos64d_scan(p, work.as_mut_ptr(), sections.as_ptr(), tables.as_ptr().cast(), states.as_mut_ptr()) }
}

/// `ferrofx_sos64d_taps_channels` (`p.chunks` 1) or `ferrofx_sos64d_taps_scan`
/// (sos64.cu): the cascade over `input` (rows `p.stride` apart) out of place into `outs`,
/// section `i`'s output at `i * out_step` (each `p.channels x p.stride` long).
pub fn sos64d_taps(p: SosParams, input: &[f64], outs: &mut [f64], out_step: usize, sections: &[Section64], tables: &[[f64; 4]], states: &mut [[f64; 2]]) {
    check_sos(&p, input.len(), sections.len(), states.len());
    assert!(out_step >= p.channels as usize * p.stride as usize, "out_step {out_step} shorter than a section's rows for {p:?}");
    if p.count > 0 {
        check_sos(&p, outs.len().saturating_sub((p.count as usize - 1) * out_step), sections.len(), states.len());
    }
    let out_step = out_step as u64;
    if p.chunks == 1 {
        // SAFETY: every index the C code forms from `p` and `out_step` is within `input`
        // (read) and `outs` (written, a distinct `&mut` slice), checked above.
        unsafe { fx_host_sos64d_taps_channels(p, input.as_ptr(), outs.as_mut_ptr(), out_step, sections.as_ptr(), states.as_mut_ptr()) }
    } else {
        assert!(tables.len() >= (p.first + p.count) as usize * SCAN_STEPS, "tables too short");
        assert!(p.chunks as usize <= SOS_THREADS && (p.chunks * p.chunk_len) as usize >= p.frames as usize, "chunking {p:?}");
        // SAFETY: as above; tables hold SCAN_STEPS entries for every section indexed.
        unsafe { fx_host_sos64d_taps_scan(p, input.as_ptr(), outs.as_mut_ptr(), out_step, sections.as_ptr(), tables.as_ptr().cast(), states.as_mut_ptr()) }
    }
}

fn check_rows(p: &RowsParams, src: usize, dst: usize) {
    if p.rows == 0 || p.n == 0 {
        return;
    }
    let end = |stride: u32, at: u32| (p.rows as usize - 1) * stride as usize + at as usize + p.n as usize;
    assert!(end(p.src_stride, p.src_at) <= src && end(p.dst_stride, p.dst_at) <= dst, "row ranges outside the buffers: {p:?}");
}

/// `ferrofx_rows_f64_to_f32` over a grid of `grid_y` row blocks (the launch's
/// `min(rows, 65535)`; fewer here to exercise the rows-apart walk).
pub fn rows_f64_to_f32(p: RowsParams, grid_y: u32, src: &[f64], dst: &mut [f32]) {
    check_rows(&p, src.len(), dst.len());
    let grid_x = (p.n as usize).div_ceil(ROWS_THREADS) as u32;
    // SAFETY: every index the C code forms from `p` was checked against both lengths.
    unsafe { fx_host_rows_convert(p, grid_x, grid_y.max(1), 1, src.as_ptr().cast(), dst.as_mut_ptr().cast()) }
}

/// `ferrofx_rows_f32_to_f64`, as [`rows_f64_to_f32`].
pub fn rows_f32_to_f64(p: RowsParams, grid_y: u32, src: &[f32], dst: &mut [f64]) {
    check_rows(&p, src.len(), dst.len());
    let grid_x = (p.n as usize).div_ceil(ROWS_THREADS) as u32;
    // SAFETY: as above.
    unsafe { fx_host_rows_convert(p, grid_x, grid_y.max(1), 0, src.as_ptr().cast(), dst.as_mut_ptr().cast()) }
}

/// `ferrofx_adjoint_step64` over `blocks` blocks: `g` (which must not be `lam`) gets the
/// next gradient, `partial` each block's six sums (`6 x blocks`).
pub fn adjoint_step64(p: AdjointParams, blocks: u32, lam: &[f64], xs: &[f64], ys: &[f64], g: &mut [f64], partial: &mut [f64]) {
    let total = p.total as usize;
    assert!(p.row_len >= 2 && total.is_multiple_of(p.row_len as usize), "rows of {} in {total}", p.row_len);
    assert!(lam.len() >= total && xs.len() >= total && ys.len() >= total && g.len() >= total, "buffers shorter than {total}");
    assert!(blocks >= 1 && partial.len() >= 6 * blocks as usize, "partial holds {} sums for {blocks} blocks", partial.len());
    // SAFETY: every index the C code forms is below `total` (checked for each buffer) or
    // below 6 x blocks (partial); `g` is a distinct `&mut` slice.
    unsafe { fx_host_adjoint_step64(p, blocks, lam.as_ptr(), xs.as_ptr(), ys.as_ptr(), g.as_mut_ptr(), partial.as_mut_ptr()) }
}

fn check_fir(p: &FirParams, work: usize, taps: usize, history: usize, out: usize) {
    assert!(p.taps >= 1 && p.frames <= p.stride, "{p:?}");
    assert!(p.channels as usize * p.stride as usize <= work.min(out), "work/out too short for {p:?}");
    assert!((p.tap_base + p.taps) as usize <= taps, "taps too short");
    assert!(p.hist_base as usize + (p.channels * (p.taps - 1)) as usize <= history, "history too short");
}

/// `ferrofx_fir_direct`: `out` gets the block's output.
pub fn fir_direct(p: FirParams, work: &[f32], taps: &[f32], history: &[f32], out: &mut [f32]) {
    check_fir(&p, work.len(), taps.len(), history.len(), out.len());
    // SAFETY: the lengths were checked against every index the C code forms from `p`.
    unsafe { fx_host_fir_direct(p, work.as_ptr(), taps.as_ptr(), history.as_ptr(), out.as_mut_ptr()) }
}

/// `ferrofx_fir_history`: `hist_out` gets each channel's new history.
pub fn fir_history(p: FirParams, work: &[f32], history: &[f32], hist_out: &mut [f32]) {
    check_fir(&p, work.len(), p.tap_base as usize + p.taps as usize, history.len(), work.len());
    assert!(hist_out.len() >= history.len());
    // SAFETY: as above.
    unsafe { fx_host_fir_history(p, work.as_ptr(), history.as_ptr(), hist_out.as_mut_ptr()) }
}

/// The FFT-partitioned FIR kernels (fft_fir.cu) in their launch order: `out` gets the
/// block's output. `kernel` holds the partitions' spectra from `kernel_base`, `tw` the
/// twiddles of the largest FFT (`n_max / 2` entries, `tw_scale = n_max / n`).
#[allow(clippy::too_many_arguments)]
pub fn fft_fir(p: FftParams, work: &[f32], history: &[f32], kernel: &[[f32; 2]], tw: &[[f32; 2]], out: &mut [f32]) {
    let n = p.n as usize;
    assert!(n.is_power_of_two() && n == 2 * p.part as usize && p.frames <= p.stride, "{p:?}");
    assert!(p.channels as usize * p.stride as usize <= work.len().min(out.len()), "work/out too short for {p:?}");
    assert!(p.hist_base as usize + (p.channels * (p.taps - 1)) as usize <= history.len(), "history too short");
    assert!(p.kernel_base as usize + (p.pcount as usize) * n <= kernel.len(), "kernel spectra too short");
    assert!(tw.len() * 2 >= n * p.tw_scale as usize && p.tw_scale >= 1, "twiddles too short");
    assert!(p.outs == p.frames.div_ceil(p.part) && p.segs == p.outs + p.pcount, "segments {p:?}");
    let rows = p.channels as usize * p.segs.max(p.outs) as usize;
    let mut a = vec![[0.0f32; 2]; rows * n];
    let mut b = vec![[0.0f32; 2]; rows * n];
    let log2n = n.trailing_zeros();
    // SAFETY: the lengths were checked against every index the C code forms from `p`;
    // `a` and `b` hold every segment of every channel.
    unsafe {
        fx_host_fft_fir(p, log2n, work.as_ptr(), history.as_ptr(), kernel.as_ptr(), tw.as_ptr(), a.as_mut_ptr(), b.as_mut_ptr(), out.as_mut_ptr())
    }
}
