//! [`CudaChain`]: a designed chain's device buffers and launch plan for one channel count
//! and largest block, and one job's round trip: the block and its state written to
//! pinned host memory, uploaded, run through the stages' kernels, downloaded. The
//! upload, kernels and download of a block length (and staging slot) are captured once
//! as a CUDA graph and replayed per job; scan tables live in device buffers the graph
//! reads, so a new block length rewrites them without touching the graphs of other
//! lengths.
//!
//! Construction and the job API are here; `staging.rs` holds the pinned slots and the
//! state hand-over, `launch.rs` the kernels' parameters, the graphs and the launches.

pub(crate) mod fused;
pub(super) mod launch;
mod overlap;
mod pipe;
mod registered;
pub(super) mod resident;
pub use resident::{CudaResident, Sample};
pub use fused::FUSED_MIN_FRAMES;
pub use overlap::OVERLAP_DEPTH;
pub use registered::REGISTER_MIN_BYTES;
mod staging;
mod update;

use super::{CudaDevice, CudaError};
use crate::chain::DesignedChain;
use crate::engine::ChainState;
use crate::gpu::design::{GpuDesign, StageForm};
use crate::gpu::realize::{Realization, SCAN_STEPS};
use crate::gpu::GpuError;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};
use launch::Graph;
use std::sync::Arc;

/// A stage's place in the device buffers (the backend-neutral form).
type Plan = StageForm;

/// Pinned staging slots: the overlapped stream stages block k+1 into one and reads
/// block k-1 back from another while block k's is in use.
const STAGING_SLOTS: usize = 3;

/// A designed chain on a CUDA device for `channels` channels and blocks of up to
/// `max_frames` frames.
pub struct CudaChain {
    dev: Arc<CudaDevice>,
    stream: Arc<CudaStream>,
    channels: usize,
    max_frames: usize,
    plans: Vec<Plan>,
    realizations: Vec<Realization>,
    work: CudaSlice<f32>,
    /// A whole job's device buffer (staging chains only; one element otherwise): the SOS
    /// states, the FIR histories and the block laid out as a staging slot
    /// ([`staging::SlotLayout`]), so a job's upload and download are one copy each. Jobs
    /// run their kernels on it; the overlapped stream and resident calls on `work`,
    /// `work2`, `states` and `history`, and each path takes the state in and gives it back
    /// through its own buffers.
    io: CudaSlice<f32>,
    /// The float64 cascades' samples between their sections (`f64`, laid out as `work`;
    /// one element while no cascade runs in float64: allocated when one first does).
    wide: CudaSlice<f64>,
    /// The overlapped stream's second work buffer (block k+1 is uploaded into one while
    /// the kernels run block k in the other).
    work2: CudaSlice<f32>,
    tmp: CudaSlice<f32>,
    sections: CudaSlice<f32>,
    tables: CudaSlice<f32>,
    /// Every section in double precision too (the float64 kernels' records, 12 per
    /// section) and its scan tables: a cascade moves between the precisions in place.
    sections64: CudaSlice<f64>,
    tables64: CudaSlice<f64>,
    /// The SOS states, [`state_words`] floats: the float32 cascades' (2 floats per
    /// section and channel, `[stage][channel][section]`), then the float64 cascades'
    /// (each `f64` as two floats' bits, 4 per section and channel, the same indexing).
    states: CudaSlice<f32>,
    taps: CudaSlice<f32>,
    history: CudaSlice<f32>,
    hist_out: CudaSlice<f32>,
    /// The FFT path's buffers (one element where no stage uses it): the partitions'
    /// spectra, the twiddles of the largest FFT, two spectrum work buffers (complex as
    /// pairs of floats).
    kernel: CudaSlice<f32>,
    twiddles: CudaSlice<f32>,
    spec_a: CudaSlice<f32>,
    spec_b: CudaSlice<f32>,
    n_max: usize,
    /// Pinned host staging: [`STAGING_SLOTS`] slots, each the SOS states, the FIR
    /// histories and the block (`channels x max_frames`) as [`staging::SlotLayout`] lays
    /// them out.
    pinned: PinnedHostSlice<f32>,
    fir_len: usize,
    table_chunk_len: usize,
    table_scratch: Vec<f32>,
    table_scratch64: Vec<f64>,
    sequential_max: usize,
    /// Every block's scan chunking, where fixed (a resident chain: its unit's, so a
    /// stream of calls equals one call bit for bit); otherwise each block's own.
    fixed_chunking: Option<(usize, usize)>,
    /// Captured graphs by block length; `None` once capture failed (plain launches then).
    graphs: Option<Vec<((usize, usize), Graph)>>,
    graph_note: String,
    /// The overlapped stream's upload and download streams and its events: per work
    /// buffer, block uploaded, kernels done, buffer read back (free for the next upload);
    /// per staging slot, block downloaded.
    copy_in: Arc<CudaStream>,
    copy_out: Arc<CudaStream>,
    uploaded: [CudaEvent; 2],
    computed: [CudaEvent; 2],
    freed: [CudaEvent; 2],
    downloaded: [CudaEvent; STAGING_SLOTS],
    /// The overlapped stream's blocks in flight.
    flight: overlap::Flight,
    overlap: bool,
    /// Long calls of `process_slices` register the caller's buffers (`registered.rs`),
    /// and why the last one that tried could not.
    register_host: bool,
    register_note: String,
    /// The fused cascade scan (opt-in): which cascades run through it, its tables and
    /// scratch buffers.
    fused: fused::Fused,
    /// The warp pipeline for short blocks (opt-in): its frame limit and lane table.
    pipe: pipe::Pipe,
    /// Graphs captured, coefficient updates taken (for tests: see `graph_counts`).
    captures: usize,
    coefficient_updates: usize,
}

fn gpu(e: GpuError) -> CudaError {
    CudaError::Gpu(e)
}

/// Floats of SOS state per job for `sections` sections (channels x sections in all): 2 per
/// section in float32, then 4 (one `f64` pair as bits) per section in float64, both kept
/// for every section (a cascade may change precision with new coefficients).
pub(super) fn state_words(sections: usize) -> usize {
    6 * sections
}

/// The design of `chain` for this backend: the neutral one, plus the grid's limit on an
/// FFT stage's segments in one launch.
fn design_for(chain: &DesignedChain, channels: usize, max_frames: usize, sequential_max: usize) -> Result<GpuDesign, CudaError> {
    // Every CUDA device the kernels run on (compute capability 7.0 and newer) has float64:
    // a cascade float32 would miss runs in float64 (sos64.cu), or is declined where that
    // would miss too.
    let design = GpuDesign::new(chain, channels, max_frames, sequential_max, "CUDA", true)?;
    for (index, stage) in design.stages.iter().enumerate() {
        if let StageForm::Fir { fft: Some(f), .. } = stage {
            let rows = channels * (max_frames.div_ceil(f.part) + f.pcount);
            if rows > 65_535 {
                return Err(gpu(GpuError::Unsupported {
                    what: format!("stage {index}: {rows} FFT segments in one launch (at most 65,535): fewer channels or a shorter block"),
                }));
            }
        }
    }
    Ok(design)
}

impl CudaChain {
    /// Buffers and plan for `chain`, or why it does not run here (a cascade whose float32
    /// and float64 forms both miss the tolerance, a FIR longer than [`crate::gpu::design::MAX_FIR_TAPS`]).
    pub fn new(dev: &Arc<CudaDevice>, chain: &DesignedChain, channels: usize, max_frames: usize) -> Result<CudaChain, CudaError> {
        Self::build(dev, chain, channels, max_frames, true)
    }

    /// [`CudaChain::new`]; without `staging` (a resident chain, whose data never passes
    /// through host memory) the pinned host slots and the overlapped stream's second work
    /// buffer are left out (one element each): only the kernels on `work` may run then.
    pub(super) fn build(dev: &Arc<CudaDevice>, chain: &DesignedChain, channels: usize, max_frames: usize, staging: bool) -> Result<CudaChain, CudaError> {
        let channels = channels.max(1);
        let max_frames = max_frames.max(1);
        if channels > 65_535 {
            return Err(gpu(GpuError::Unsupported { what: format!("{channels} channels") }));
        }
        let sequential_max = dev.tuning.sequential_max_frames;
        let design = design_for(chain, channels, max_frames, sequential_max)?;
        let records: Vec<f32> = design.section_records().concat();
        let records64: Vec<f64> = design.section_records64().concat();
        let has_float64 = design.has_float64();
        let GpuDesign { stages: plans, realizations, taps: taps_all, spectra: kernel_spectra, fir_len, spec_len } = design;
        let stream = dev.stream()?;
        let total = realizations.len();
        let block = channels * max_frames;
        let zeros = |n: usize| stream.alloc_zeros::<f32>(n.max(1));
        let mut sections = zeros(records.len())?;
        let mut taps = zeros(taps_all.len())?;
        if !records.is_empty() {
            stream.memcpy_htod(&records, &mut sections)?;
        }
        let zeros64 = |n: usize| stream.alloc_zeros::<f64>(n.max(1));
        let mut sections64 = zeros64(records64.len())?;
        if !records64.is_empty() {
            stream.memcpy_htod(&records64, &mut sections64)?;
        }
        if !taps_all.is_empty() {
            stream.memcpy_htod(&taps_all, &mut taps)?;
        }
        let n_max = plans.iter().filter_map(|p| if let Plan::Fir { fft: Some(f), .. } = p { Some(2 * f.part) } else { None }).max().unwrap_or(2);
        let tw: Vec<f32> = (0..n_max / 2)
            .flat_map(|m| {
                let a = -2.0 * std::f64::consts::PI * m as f64 / n_max as f64;
                [a.cos() as f32, a.sin() as f32]
            })
            .collect();
        let mut twiddles = zeros(tw.len())?;
        stream.memcpy_htod(&tw, &mut twiddles)?;
        let flat: Vec<f32> = kernel_spectra.iter().flatten().copied().collect();
        let mut kernel = zeros(flat.len())?;
        if !flat.is_empty() {
            stream.memcpy_htod(&flat, &mut kernel)?;
        }
        let staged = if staging { STAGING_SLOTS * staging::SlotLayout::new(state_words(channels * total), fir_len, block).len() } else { 1 };
        // SAFETY: page-locked host memory for the staging buffer, three slots so the host
        // stages one block and reads another back while the device runs a third (one
        // element, never touched, without staging). The host reads or writes a slot only
        // while no copy that uses it is in flight: a slot's job is synchronised before the
        // slot is read back or reused (`process`, `process_slices`). Cached memory by
        // default: the host reads every block back out of it, and reading
        // write-combined memory from the CPU is uncached (NVIDIA's best-practices guide:
        // "prohibitively slow"); `CudaTuning::staging_write_combined` gives the
        // write-combined memory the chain used before (cudarc's `alloc_pinned`), to time both.
        let flags = if dev.tuning.staging_write_combined { cudarc::driver::sys::CU_MEMHOSTALLOC_WRITECOMBINED } else { 0 };
        let pinned = unsafe { dev.ctx.alloc_pinned_with_flags::<f32>(staged, flags) }?;
        let event = || dev.ctx.new_event(None);
        let fused = fused::Fused::off(&stream, plans.len())?;
        let pipe = pipe::Pipe::off(&stream)?;
        let mut chain = CudaChain {
            fused,
            pipe,
            copy_in: dev.stream()?,
            copy_out: dev.stream()?,
            uploaded: [event()?, event()?],
            computed: [event()?, event()?],
            freed: [event()?, event()?],
            downloaded: [event()?, event()?, event()?],
            flight: overlap::Flight::default(),
            overlap: dev.tuning.overlap,
            register_host: dev.tuning.register_host,
            register_note: String::new(),
            work2: zeros(if staging { block } else { 1 })?,
            work: zeros(block)?,
            io: zeros(if staging { staging::SlotLayout::new(state_words(channels * total), fir_len, block).len() } else { 1 })?,
            wide: zeros64(if has_float64 { block } else { 1 })?,
            tmp: zeros(block)?,
            tables: zeros(total * SCAN_STEPS * 4)?,
            tables64: zeros64(total * SCAN_STEPS * 4)?,
            sections64,
            states: zeros(state_words(channels * total))?,
            history: zeros(fir_len)?,
            hist_out: zeros(fir_len)?,
            spec_a: zeros(2 * spec_len)?,
            spec_b: zeros(2 * spec_len)?,
            kernel,
            twiddles,
            n_max,
            sections,
            taps,
            pinned,
            dev: dev.clone(),
            stream,
            channels,
            max_frames,
            plans,
            realizations,
            fir_len,
            table_chunk_len: 0,
            table_scratch: vec![0.0; total * SCAN_STEPS * 4],
            table_scratch64: vec![0.0; total * SCAN_STEPS * 4],
            sequential_max,
            fixed_chunking: None,
            graphs: Some(Vec::new()),
            graph_note: String::new(),
            captures: 0,
            coefficient_updates: 0,
        };
        if dev.tuning.fused_sections > 0 {
            chain.set_fused(dev.tuning.fused_sections)?;
        }
        if dev.tuning.pipeline_max_frames > 0 {
            chain.set_pipeline(dev.tuning.pipeline_max_frames)?;
        }
        chain.stream.synchronize()?;
        Ok(chain)
    }

    pub fn channels(&self) -> usize {
        self.channels
    }

    pub fn max_frames(&self) -> usize {
        self.max_frames
    }

    /// A zeroed state of this chain's shape (the layout of
    /// [`crate::engine::Engine::new_state`] for the same chain and channels).
    pub fn new_state(&self) -> ChainState {
        ChainState { sos: vec![[0.0; 2]; self.channels * self.realizations.len()], fir: vec![0.0; self.fir_len] }
    }

    /// Blocks up to `frames` take the channel-parallel kernel (tests force either path).
    pub fn set_sequential_max(&mut self, frames: usize) {
        self.sequential_max = frames;
        self.graphs = self.graphs.take().map(|_| Vec::new());
    }

    /// Replays captured graphs (the default) or launches each kernel; tests compare both.
    pub fn set_graphs(&mut self, on: bool) {
        self.graphs = if on { Some(Vec::new()) } else { None };
    }

    /// Whether jobs replay captured graphs, and why not when they do not.
    pub fn graph_status(&self) -> (bool, &str) {
        (self.graphs.is_some(), &self.graph_note)
    }

    /// Filters `data` (planar, `channels x frames`, `frames <= max_frames`) in place from
    /// `state`, leaving the end state there. Blocks this thread until the device is done.
    pub fn process(&mut self, data: &mut [f32], frames: usize, state: &mut ChainState) -> Result<(), CudaError> {
        let n = self.job(data, frames, state)?;
        data[..n].copy_from_slice(&self.slot_block(0)?[..n]);
        Ok(())
    }

    /// Filters `input` (planar, `channels x frames`) into `output` from `state`, leaving
    /// the end state there; `output` needs `channels x frames` samples. Blocks this thread
    /// until the device is done.
    pub fn process_into(&mut self, input: &[f32], output: &mut [f32], frames: usize, state: &mut ChainState) -> Result<(), CudaError> {
        let n = self.job(input, frames, state)?;
        let Some(out) = output.get_mut(..n) else {
            return Err(gpu(GpuError::Job { why: format!("an output of {} samples for {n}", output.len()) }));
        };
        out.copy_from_slice(&self.slot_block(0)?[..n]);
        Ok(())
    }

    /// One synchronous job from slot 0: `input` and `state` staged, run, the end state
    /// read back; the output is the slot's first `channels x frames` samples (returned).
    fn job(&mut self, input: &[f32], frames: usize, state: &mut ChainState) -> Result<usize, CudaError> {
        let n = self.channels * frames;
        if frames == 0 {
            return Ok(0);
        }
        if input.len() < n {
            return Err(gpu(GpuError::Job {
                why: format!("{} samples for {} channels x {frames} frames (largest block {})", input.len(), self.channels, self.max_frames),
            }));
        }
        self.check_job(frames, state)?;
        self.check_idle()?;
        self.slot_block_mut(0)?[..n].copy_from_slice(&input[..n]);
        self.stage_state(0, state)?;
        let launched = self.launch(0, frames);
        self.settled(launched)?;
        self.stream.synchronize()?;
        self.read_state(0, state)?;
        Ok(n)
    }

    /// Filters the channel slices (as many frames as the shortest holds) in place, in
    /// blocks of up to `max_frames`, from `state` (left at the end state), through the
    /// overlapped stream ([`CudaChain::submit_block`], [`CudaChain::collect_block`]):
    /// while the kernels run block k, block k+1 is uploaded and block k-1 downloaded on
    /// streams of their own, the host copies them into and out of pinned memory, and the
    /// filter state stays on the device from the first block to the last
    /// (`set_overlap(false)`, or a device opened with `CudaTuning::overlap` off: one stream, each block's
    /// upload, kernels and download in one graph, the state through the host between
    /// blocks; the same bits either way).
    pub fn process_slices(&mut self, buffers: &mut [&mut [f32]], state: &mut ChainState) -> Result<(), CudaError> {
        let channels = self.channels;
        if buffers.len() != channels {
            return Err(gpu(GpuError::Job { why: format!("{} channel buffers for a chain of {channels} channels", buffers.len()) }));
        }
        let frames = buffers.iter().map(|b| b.len()).min().unwrap_or(0);
        if frames == 0 {
            return Ok(());
        }
        self.check_job(1, state)?;
        self.check_idle()?;
        let max = self.max_frames;
        let blocks: Vec<(usize, usize)> = (0..frames).step_by(max).map(|s| (s, max.min(frames - s))).collect();
        let streamed = if self.registers(buffers) {
            match self.stream_registered(buffers, &blocks, state) {
                Ok(true) => Ok(()),
                Ok(false) => self.stream_overlapped(buffers, &blocks, state),
                Err(e) => Err(e),
            }
        } else if self.overlap {
            self.stream_overlapped(buffers, &blocks, state)
        } else {
            self.stream_staged(buffers, &blocks, state)
        };
        self.settled(streamed)
    }

    /// `r`, after waiting for both streams when it is an error: copies that were
    /// enqueued before the failure may still read or write the pinned slots, which the
    /// next job reuses (or dropping the chain frees).
    pub(super) fn settled<T>(&mut self, r: Result<T, CudaError>) -> Result<T, CudaError> {
        if r.is_err() {
            self.abandon();
        }
        r
    }

    /// Whether [`CudaChain::process_slices`] (and the backend's block stream) overlaps
    /// copies and kernels on three streams (the default) or runs each block as one
    /// graph; tests compare both.
    pub fn set_overlap(&mut self, on: bool) {
        self.overlap = on;
    }

    /// Whether streams overlap ([`CudaChain::set_overlap`]).
    pub fn overlap(&self) -> bool {
        self.overlap
    }

    /// The stream on one CUDA stream: block k's upload, kernels and download are one
    /// graph from staging slot k % 2, the state handed over through the host; the host's
    /// pinned copies of blocks k-1 and k+1 overlap the device's work on block k.
    fn stream_staged(&mut self, buffers: &mut [&mut [f32]], blocks: &[(usize, usize)], state: &mut ChainState) -> Result<(), CudaError> {
        self.stage_block(0, blocks[0], buffers)?;
        self.stage_state(0, state)?;
        self.launch(0, blocks[0].1)?;
        for k in 1..=blocks.len() {
            let (slot, prev) = (k % 2, (k - 1) % 2);
            if k < blocks.len() {
                // Overlaps the device's work on block k-1.
                self.stage_block(slot, blocks[k], buffers)?;
            }
            self.stream.synchronize()?;
            self.read_state(prev, state)?;
            if k < blocks.len() {
                self.stage_state(slot, state)?;
                self.launch(slot, blocks[k].1)?;
            }
            // Overlaps the device's work on block k.
            self.unstage_block(prev, blocks[k - 1], buffers)?;
        }
        Ok(())
    }

    /// Refuses a job while blocks of the overlapped stream are in flight (they use the
    /// same buffers and carry the state on the device).
    fn check_idle(&self) -> Result<(), CudaError> {
        match self.flight.in_flight() {
            0 => Ok(()),
            n => Err(gpu(GpuError::Job { why: format!("{n} blocks of a stream in flight: collect them first") })),
        }
    }

    /// Whether a job of `frames` frames from `state` fits this chain.
    fn check_job(&self, frames: usize, state: &ChainState) -> Result<(), CudaError> {
        let (channels, total) = (self.channels, self.realizations.len());
        if frames > self.max_frames {
            return Err(gpu(GpuError::Job { why: format!("{frames} frames (largest block {})", self.max_frames) }));
        }
        crate::gpu::design::check_state(state, channels * total, self.fir_len).map_err(gpu)?;
        Ok(())
    }
}
