//! [`CudaSos64`]: one cascade of second-order sections in float64 over float64 device
//! memory the caller owns, in place, from zero state or from SciPy-form initial states
//! (`zi`, giving back `zf`), a whole signal per call, on the caller's stream. What the
//! Python package runs on CUDA tensors for `ferrofx.signal`'s functions and for the
//! PyTorch operator (`ferrofx.torch`): its forward pass and the filters of its adjoint, whose gradients
//! `torch.autograd.gradcheck` checks in float64 (the chain path, [`super::CudaResident`],
//! runs float32 samples and would not pass it).
//!
//! The sections run in the delta form of [`crate::gpu::realize`] in `f64`
//! (`kernels/sos64.cu`'s `sos64d` kernels: one thread per row up to the device's
//! sequential limit, else a 256-chunk scan per row), bit for bit
//! `realize::model_section::<f64>`; the same error estimate as every GPU path declines a
//! cascade that would miss the tolerance even in float64 (with the reason).
//!
//! With the device's fused scan on ([`super::CudaTuning`]'s `fused_sections`, opt-in
//! until a device has timed it), rows of at least [`FUSED_MIN_FRAMES`] frames run through
//! `kernels/sos_fused.cu`'s double kernels instead: groups of up to that many sections,
//! each row spread over one thread block per 32,768 frames rather than one block per row
//! (few long rows, `api_chain`'s 8, otherwise occupy 8 of a GPU's 132 SMs), the samples
//! read twice and written once per group rather than three times per section; bit for
//! bit `gpu::fused::model_fused::<f64>`, where the cascade's float64 fused estimate is
//! within [`crate::gpu::fused::FUSED64_ERROR_BUDGET`] of the sequential form (else the
//! per-section kernels).

use super::chain::fused::FusedParams;
use super::chain::launch::SosParams;
use super::chain::resident::{order, range_of};
use super::{CudaDevice, CudaError};
use crate::design::Sos;
use crate::gpu::fused::{fuse_cascade_as, fusable64, fused_groups, FUSED_CHUNK_FRAMES, FUSED_MAX_SECTIONS, FUSED_MIN_FRAMES, FUSED_TABLE_FLOATS, FUSED_TILE, FUSED_WIDTH};
use crate::gpu::realize::{chunking, realize_cascade, Realization, SCAN_STEPS};
use crate::gpu::GpuError;
use cudarc::driver::{sys, CudaEvent, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// Signal lengths whose error estimate a cascade remembers.
const CHECKED_KEPT: usize = 16;

fn job(why: String) -> CudaError {
    CudaError::Gpu(GpuError::Job { why })
}

/// A float64 cascade on a CUDA device, for float64 rows in device memory.
pub struct CudaSos64 {
    dev: Arc<CudaDevice>,
    stream: Arc<CudaStream>,
    sos: Vec<Sos>,
    realizations: Vec<Realization>,
    sections: CudaSlice<f64>,
    tables: CudaSlice<f64>,
    /// The chunk length `tables` was written for (0: none yet).
    table_chunk_len: usize,
    /// Set per call (zero, or a caller's `zi` in the delta form): 2 per section and row
    /// (grown to the largest call's rows).
    states: CudaSlice<f64>,
    /// Frame counts whose error estimate passed (the estimate depends on the chunking),
    /// the last [`CHECKED_KEPT`], and whether each section's alone did too.
    checked: Vec<(usize, bool)>,
    /// The fused scan in float64: not decided yet (`None`), or its groups and buffers
    /// (`Some(None)`: off on this device, or the cascade's estimate declines it).
    fused: Option<Option<Fused64>>,
    caller_ready: CudaEvent,
    done: CudaEvent,
}

/// A cascade's float64 fused groups on the device.
struct Fused64 {
    /// `(first, count)` per group.
    groups: Vec<(usize, usize)>,
    /// Every group's tables, [`FUSED_TABLE_FLOATS`] each.
    tables: CudaSlice<f64>,
}

impl CudaSos64 {
    /// The cascade `sos` (rows normalised or not: each is divided by its `a0`) on `dev`.
    /// A section with a zero or non-finite `a0` is refused.
    pub fn new(dev: &Arc<CudaDevice>, sos: &[Sos]) -> Result<CudaSos64, CudaError> {
        if sos.is_empty() {
            return Err(job("a cascade of no sections".into()));
        }
        if let Some(i) = sos.iter().position(|s| !(s.a[0].is_finite() && s.a[0] != 0.0)) {
            return Err(job(format!("section {i}: a0 = {} (must be finite and nonzero)", sos[i].a[0])));
        }
        let realizations: Vec<Realization> = sos.iter().map(|s| Realization::new(&s.into())).collect();
        let records: Vec<f64> = realizations.iter().flat_map(|r| r.to_gpu_as::<f64>().words()).collect();
        let stream = dev.stream()?;
        let mut sections = stream.alloc_zeros::<f64>(records.len())?;
        stream.memcpy_htod(&records, &mut sections)?;
        let tables = stream.alloc_zeros::<f64>(realizations.len() * SCAN_STEPS * 4)?;
        let states = stream.alloc_zeros::<f64>(2 * realizations.len())?;
        let (caller_ready, done) = (dev.ctx.new_event(None)?, dev.ctx.new_event(None)?);
        stream.synchronize()?;
        Ok(CudaSos64 { dev: dev.clone(), stream, sos: sos.to_vec(), realizations, sections, tables, table_chunk_len: 0, states, checked: Vec::new(), fused: None, caller_ready, done })
    }

    /// Sections per fused group where this cascade runs through the float64 fused scan
    /// on rows of at least [`FUSED_MIN_FRAMES`] frames (0: it does not: the device's
    /// tuning has it off, or the cascade's float64 fused estimate declines it). Decides
    /// (and uploads the tables) on first use.
    pub fn fused_sections(&mut self) -> Result<usize, CudaError> {
        Ok(self.fused()?.map_or(0, |f| f.groups.iter().map(|g| g.1).max().unwrap_or(0)))
    }

    fn fused(&mut self) -> Result<Option<&mut Fused64>, CudaError> {
        if self.fused.is_none() {
            let group_max = self.dev.tuning.fused_sections.min(FUSED_MAX_SECTIONS);
            let decided = if group_max > 0 && fusable64(&self.realizations, group_max, FUSED_CHUNK_FRAMES) {
                let words: Vec<f64> = fuse_cascade_as::<f64>(&self.realizations, group_max, FUSED_CHUNK_FRAMES).iter().flat_map(|g| g.table_words().collect::<Vec<_>>()).collect();
                let mut tables = self.stream.alloc_zeros::<f64>(words.len())?;
                self.stream.memcpy_htod(&words, &mut tables)?;
                let groups = fused_groups(self.realizations.len(), group_max);
                Some(Fused64 { groups, tables })
            } else {
                None
            };
            self.fused = Some(decided);
        }
        Ok(self.fused.as_mut().and_then(Option::as_mut))
    }

    /// Filters `rows` rows of `frames` float64 samples at device address `data` (row `r`
    /// at `r * frames`), in place, each from zero state, ordered on the caller's CUDA
    /// stream `stream` (0: the legacy default stream). Returns without waiting for the
    /// device. Refused by name: an address that is not device memory of this context or
    /// whose allocation is too short, a cascade whose float64 form would miss the
    /// tolerance for signals of this length.
    ///
    /// # Safety
    /// `stream` must be a live stream of this device's primary context (or 0), and no
    /// other work may touch the memory until this call's work is done on that stream.
    pub unsafe fn process_raw(&mut self, data: u64, rows: usize, frames: usize, stream: u64) -> Result<(), CudaError> {
        // SAFETY: the caller's promises, passed on.
        unsafe { self.process_raw_from(data, rows, frames, stream, None) }.map(|_| ())
    }

    /// [`CudaSos64::process_raw`] from the initial states `zi` where given: SciPy's
    /// `sosfilt` states (transposed direct form II), `rows x sections x 2` values, row-major;
    /// returns the final states in the same form (`zf`), which waits for the device (the
    /// states are a few numbers per row, copied to the host; the samples stay on the
    /// device). Without `zi`: from zero state, `None`, no wait. A `zi` of another length
    /// is refused by name.
    ///
    /// # Safety
    /// As [`CudaSos64::process_raw`].
    pub unsafe fn process_raw_from(&mut self, data: u64, rows: usize, frames: usize, stream: u64, zi: Option<&[f64]>) -> Result<Option<Vec<f64>>, CudaError> {
        self.dev.ctx.bind_to_thread()?;
        let sections = self.realizations.len();
        if let Some(zi) = zi {
            if zi.len() != rows * sections * 2 {
                return Err(job(format!("zi holds {} values; {rows} rows x {sections} sections x 2 need {}", zi.len(), rows * sections * 2)));
            }
            if let Some(i) = zi.iter().position(|v| !v.is_finite()) {
                return Err(job(format!("zi[{i}] = {} (initial states must be finite)", zi[i])));
            }
        }
        let bytes = (rows * frames * 8) as u64;
        let (start, size) = range_of(data).map_err(|e| job(format!("the address {data:#x} is not device memory of this context ({e})")))?;
        if data + bytes > start + size {
            return Err(job(format!("the allocation holds {} bytes from {data:#x}; {rows} rows x {frames} frames of float64 need {bytes}", start + size - data)));
        }
        if rows == 0 {
            return Ok(zi.map(|_| Vec::new()));
        }
        if frames == 0 {
            return Ok(zi.map(<[f64]>::to_vec));
        }
        let too_large = || job(format!("{rows} rows x {frames} frames in one call (at most 2^31 rows and 2^32 - 1 frames)"));
        let (rows32, frames32) = (u32::try_from(rows).map_err(|_| too_large())?, u32::try_from(frames).map_err(|_| too_large())?);
        if rows32 > i32::MAX as u32 {
            return Err(too_large());
        }
        self.check_frames(frames, false)?;
        // The fused scan: long rows, and no more rows than a grid's second dimension holds.
        let fused = frames >= FUSED_MIN_FRAMES && rows <= 65_535 && self.fused()?.is_some();
        let (chunks, chunk_len) = chunking(frames, self.dev.tuning.sequential_max_frames);
        if !fused {
            self.scan_tables(chunks, chunk_len)?;
        }
        let need = 2 * rows * sections;
        self.states_for(need)?;
        // The start states, in stream order before the kernels: zero, or zi in the delta form.
        match zi {
            None => self.stream.memset_zeros(&mut self.states.slice_mut(..need))?,
            Some(zi) => {
                let delta: Vec<f64> = zi.chunks_exact(2).enumerate().flat_map(|(i, z)| self.realizations[i % sections].state_to_gpu_as::<f64>([z[0], z[1]])).collect();
                self.stream.memcpy_htod(&delta, &mut self.states.slice_mut(..need))?;
            }
        }
        let caller = stream as sys::CUstream;
        let ours = self.stream.cu_stream();
        // SAFETY: both events and streams are live in this context (bound above).
        let ordered = unsafe { order(self.caller_ready.cu_event(), caller, ours) };
        let ran = ordered.and_then(|()| if fused { self.launch_fused(data, rows32, frames32) } else { self.launch(data, rows32, frames32, chunks, chunk_len) });
        // SAFETY: as above, the other way round.
        let ordered = ran.and_then(|()| unsafe { order(self.done.cu_event(), ours, caller) });
        ordered.map_err(|e| job(format!("the device refused the job ({e})")))?;
        let Some(_) = zi else { return Ok(None) };
        let end = self.stream.clone_dtoh(&self.states.slice(..need))?;
        self.stream.synchronize()?;
        Ok(Some(end.chunks_exact(2).enumerate().flat_map(|(i, s)| self.realizations[i % sections].state_from_gpu([s[0], s[1]])).collect()))
    }

    /// The cascade over `rows` rows of `frames` float64 samples at device address `input`
    /// (row `r` at `r * stride` samples), each row from zero state, out of place with every
    /// section's output kept: section `i`'s rows at `outs` + `i * rows * stride` samples,
    /// laid out as the input's (the samples between a row's frames and the next row are
    /// neither read nor written), ordered on the caller's CUDA stream `stream`. The forward
    /// signals of the PyTorch layer's backward pass in one launch (`ferrofx.torch`), each
    /// sample read twice and written once per section. Section `i`'s rows hold, bit for
    /// bit, what [`CudaSos64::process_raw`] leaves after the first `i + 1` sections of this
    /// cascade where it runs the per-section kernels (not the fused scan). Returns without
    /// waiting for the device. Refused by name as `process_raw`, and: a stride shorter
    /// than the frames, `outs` overlapping `input`.
    ///
    /// # Safety
    /// As [`CudaSos64::process_raw`], for both buffers.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn taps_raw(&mut self, input: u64, outs: u64, rows: usize, frames: usize, stride: usize, stream: u64) -> Result<(), CudaError> {
        self.dev.ctx.bind_to_thread()?;
        let sections = self.realizations.len();
        if stride < frames {
            return Err(job(format!("rows {stride} samples apart hold no {frames} frames")));
        }
        let too_large = || job(format!("{rows} rows x {stride} samples apart in one call (at most 2^31 rows, 2^32 - 1 samples apart)"));
        let (rows32, frames32, stride32) = (u32::try_from(rows).map_err(|_| too_large())?, frames as u32, u32::try_from(stride).map_err(|_| too_large())?);
        if rows32 > i32::MAX as u32 {
            return Err(too_large());
        }
        let bytes_in = (rows as u64).checked_mul(stride as u64 * 8).ok_or_else(too_large)?;
        let bytes_out = bytes_in.checked_mul(sections as u64).ok_or_else(too_large)?;
        let held = |name: &str, at: u64, bytes: u64| -> Result<(u64, u64), CudaError> {
            let (start, size) = range_of(at).map_err(|e| job(format!("{name}: the address {at:#x} is not device memory of this context ({e})")))?;
            if at + bytes > start + size {
                return Err(job(format!("{name}: the allocation holds {} bytes from {at:#x}; {bytes} are needed", start + size - at)));
            }
            Ok((at, at + bytes))
        };
        let given = held("input", input, bytes_in)?;
        let kept = held("outs", outs, bytes_out)?;
        if given.0 < kept.1 && kept.0 < given.1 {
            return Err(job("outs overlaps input: give the sections' outputs their own buffer".into()));
        }
        if rows == 0 || frames == 0 {
            return Ok(());
        }
        self.check_frames(frames, true)?;
        let (chunks, chunk_len) = chunking(frames, self.dev.tuning.sequential_max_frames);
        self.scan_tables(chunks, chunk_len)?;
        let need = 2 * rows * sections;
        self.states_for(need)?;
        self.stream.memset_zeros(&mut self.states.slice_mut(..need))?;
        let p = SosParams {
            frames: frames32,
            chunk_len: chunk_len as u32,
            chunks: chunks as u32,
            stride: stride32,
            first: 0,
            count: sections as u32,
            state_base: 0,
            channels: rows32,
        };
        let out_step = rows as u64 * stride as u64;
        let caller = stream as sys::CUstream;
        let ours = self.stream.cu_stream();
        // SAFETY: both events and streams are live in this context (bound above).
        let ordered = unsafe { order(self.caller_ready.cu_event(), caller, ours) };
        let ran = ordered.and_then(|()| {
            if chunks == 1 {
                let cfg = LaunchConfig { grid_dim: (rows32.div_ceil(64), 1, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 };
                let mut launch = self.stream.launch_builder(&self.dev.sos64d_taps_channels);
                launch.arg(&p).arg(&input).arg(&outs).arg(&out_step).arg(&self.sections).arg(&mut self.states);
                // SAFETY: the arguments match ferrofx_sos64d_taps_channels(fx_sos_params,
                // const double*, double*, unsigned long long, const fx_section64*,
                // fx_dvec2*): `input` holds rows x stride doubles and `outs` sections
                // times that (checked above, not overlapping), `sections` 12 doubles per
                // section, `states` 2 per section and row.
                unsafe { launch.launch(cfg) }.map(|_| ()).map_err(CudaError::from)
            } else {
                let cfg = LaunchConfig { grid_dim: (rows32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
                let mut launch = self.stream.launch_builder(&self.dev.sos64d_taps_scan);
                launch.arg(&p).arg(&input).arg(&outs).arg(&out_step).arg(&self.sections).arg(&self.tables).arg(&mut self.states);
                // SAFETY: as above for ferrofx_sos64d_taps_scan, plus `tables` with
                // SCAN_STEPS 2x2 entries per section; chunks <= 256 threads.
                unsafe { launch.launch(cfg) }.map(|_| ()).map_err(CudaError::from)
            }
        });
        // SAFETY: as above, the other way round.
        let ordered = ran.and_then(|()| unsafe { order(self.done.cu_event(), ours, caller) });
        ordered.map_err(|e| job(format!("the device refused the job ({e})")))
    }

    /// Declines (with the reason) a cascade whose float64 form would miss the tolerance
    /// for signals of `frames` frames, and with `each_section` (every section's output is
    /// kept: [`CudaSos64::taps_raw`]) one of its sections whose own would; remembers the
    /// lengths that passed.
    fn check_frames(&mut self, frames: usize, each_section: bool) -> Result<(), CudaError> {
        if self.checked.iter().any(|&(f, each)| f == frames && (each || !each_section)) {
            return Ok(());
        }
        // float64 whatever float32 would do: the layer's gradients are checked in float64.
        // The shared decline rule: where float32 is within the budget, float64 (the
        // same form, finer rounding) is too; else float64's own estimate decides.
        let sequential_max = self.dev.tuning.sequential_max_frames;
        realize_cascade(&self.sos, 0, frames, sequential_max, true).map_err(CudaError::Gpu)?;
        if each_section && self.sos.len() > 1 {
            for (i, s) in self.sos.iter().enumerate() {
                realize_cascade(std::slice::from_ref(s), 0, frames, sequential_max, true).map_err(|e| job(format!("section {i} alone: {e}")))?;
            }
        }
        self.checked.retain(|&(f, _)| f != frames);
        if self.checked.len() == CHECKED_KEPT {
            self.checked.remove(0);
        }
        self.checked.push((frames, each_section));
        Ok(())
    }

    /// The per-section scan's tables for chunks of `chunk_len` on the device (none needed
    /// for one chunk).
    fn scan_tables(&mut self, chunks: usize, chunk_len: usize) -> Result<(), CudaError> {
        if chunks > 1 && chunk_len != self.table_chunk_len {
            let tables: Vec<f64> = self.realizations.iter().flat_map(|r| r.scan_table_as::<f64>(chunk_len)).flatten().collect();
            self.stream.memcpy_htod(&tables, &mut self.tables)?;
            self.table_chunk_len = chunk_len;
        }
        Ok(())
    }

    /// Room for `need` state doubles.
    fn states_for(&mut self, need: usize) -> Result<(), CudaError> {
        if self.states.len() < need {
            self.states = self.stream.alloc_zeros::<f64>(need)?;
        }
        Ok(())
    }

    /// The fused scan's three launches per group over `rows x frames` doubles at `data`,
    /// from the states in `states`.
    fn launch_fused(&mut self, data: u64, rows: u32, frames: u32) -> Result<(), CudaError> {
        let sections = self.realizations.len();
        let chunks = (frames as usize).div_ceil(FUSED_CHUNK_FRAMES);
        let tiles = chunks.div_ceil(FUSED_TILE);
        let (prefix_len, carry_len) = (rows as usize * FUSED_WIDTH * chunks, rows as usize * tiles * FUSED_WIDTH);
        let stream = self.stream.clone();
        let dev = self.dev.clone();
        let Some(f) = self.fused.as_ref().and_then(Option::as_ref) else { return Err(job("the fused scan was not prepared".into())) };
        // The scratch (an eighth of the rows' bytes) lives for this call only, allocated
        // and freed in stream order: the PyTorch operator keeps up to a hundred cascades
        // built, and each keeping its largest call's scratch would add up to many times
        // the data. Not zeroed: the ends kernel writes every chunk's prefix and the carry
        // kernel every tile's start before anything reads them.
        // SAFETY: uninitialised device memory, written by the kernels before it is read
        // (above); freed on this stream after them when dropped at the end of this call.
        let (mut prefix, mut carry) = unsafe { (stream.alloc::<f64>(prefix_len)?, stream.alloc::<f64>(carry_len)?) };
        let tile_cfg = LaunchConfig { grid_dim: (tiles as u32, rows, 1), block_dim: (FUSED_TILE as u32, 1, 1), shared_mem_bytes: 0 };
        let row_cfg = LaunchConfig { grid_dim: (rows, 1, 1), block_dim: (FUSED_WIDTH as u32, 1, 1), shared_mem_bytes: 0 };
        for (g, &(first, count)) in f.groups.iter().enumerate() {
            let p = FusedParams {
                frames,
                chunk_len: FUSED_CHUNK_FRAMES as u32,
                chunks: chunks as u32,
                tiles: tiles as u32,
                stride: frames,
                first: first as u32,
                count: count as u32,
                state_base: first as u32,
                state_stride: sections as u32,
                table_base: (g * FUSED_TABLE_FLOATS) as u32,
                channels: rows,
                pad: 0,
            };
            let mut launch = stream.launch_builder(&dev.sos64d_fused_ends);
            launch.arg(&p).arg(&data).arg(&self.sections).arg(&f.tables).arg(&mut prefix);
            // SAFETY: the arguments match ferrofx_sos64d_fused_ends(fx_fused_params, const
            // double*, const fx_section64*, const double*, double*): `data` holds rows x
            // frames doubles (checked in `process_raw`), `sections` 12 doubles per
            // section, `tables` FUSED_TABLE_FLOATS per group, `prefix` rows x
            // FUSED_WIDTH x chunks.
            unsafe { launch.launch(tile_cfg) }?;
            let mut launch = stream.launch_builder(&dev.sos64d_fused_carry);
            launch.arg(&p).arg(&f.tables).arg(&prefix).arg(&self.states).arg(&mut carry);
            // SAFETY: ferrofx_sos64d_fused_carry(fx_fused_params, const double*, const
            // double*, const fx_dvec2*, double*): `states` 2 doubles per section and row,
            // `carry` rows x tiles x FUSED_WIDTH.
            unsafe { launch.launch(row_cfg) }?;
            let mut launch = stream.launch_builder(&dev.sos64d_fused_run);
            launch.arg(&p).arg(&data).arg(&self.sections).arg(&f.tables).arg(&prefix).arg(&carry).arg(&mut self.states);
            // SAFETY: ferrofx_sos64d_fused_run(fx_fused_params, double*, const
            // fx_section64*, const double*, const double*, const double*, fx_dvec2*): the
            // buffers as above.
            unsafe { launch.launch(tile_cfg) }?;
        }
        Ok(())
    }

    fn launch(&mut self, data: u64, rows: u32, frames: u32, chunks: usize, chunk_len: usize) -> Result<(), CudaError> {
        let p = SosParams {
            frames,
            chunk_len: chunk_len as u32,
            chunks: chunks as u32,
            stride: frames,
            first: 0,
            count: self.realizations.len() as u32,
            state_base: 0,
            channels: rows,
        };
        if chunks == 1 {
            let cfg = LaunchConfig { grid_dim: (rows.div_ceil(64), 1, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 };
            let mut launch = self.stream.launch_builder(&self.dev.sos64d_channels);
            launch.arg(&p).arg(&data).arg(&self.sections).arg(&mut self.states);
            // SAFETY: the arguments match ferrofx_sos64d_channels(fx_sos_params, double*,
            // const fx_section64*, fx_dvec2*): `data` holds rows x frames doubles (checked
            // in `process_raw`), `sections` 12 doubles per section, `states` 2 doubles per
            // section and row.
            unsafe { launch.launch(cfg) }?;
        } else {
            let cfg = LaunchConfig { grid_dim: (rows, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
            let mut launch = self.stream.launch_builder(&self.dev.sos64d_scan);
            launch.arg(&p).arg(&data).arg(&self.sections).arg(&self.tables).arg(&mut self.states);
            // SAFETY: as above for ferrofx_sos64d_scan, plus `tables` with SCAN_STEPS 2x2
            // entries per section; chunks <= 256 threads.
            unsafe { launch.launch(cfg) }?;
        }
        Ok(())
    }
}
