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

/// Threads per block of the scan kernel (`FX_SOS_THREADS`): the most chunks.
pub const SOS_THREADS: usize = 256;
/// Scan steps (`FX_SCAN_STEPS`).
pub const SCAN_STEPS: usize = 8;

extern "C" {
    fn fx_host_sos_channels(p: SosParams, work: *mut f32, sections: *const Section, states: *mut [f32; 2]);
    fn fx_host_sos_scan(p: SosParams, work: *mut f32, sections: *const Section, tables: *const f32, states: *mut [f32; 2]);
    fn fx_host_fir_direct(p: FirParams, work: *const f32, taps: *const f32, history: *const f32, out: *mut f32);
    fn fx_host_fir_history(p: FirParams, work: *const f32, history: *const f32, hist_out: *mut f32);
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
