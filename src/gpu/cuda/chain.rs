//! [`CudaChain`]: a designed chain's device buffers and launch plan for one channel count
//! and largest block, and one job's round trip: the block and its state written to
//! pinned host memory, uploaded, run through the stages' kernels, downloaded. The
//! upload, kernels and download of a block length are captured once as a CUDA graph
//! and replayed per job; scan tables live in device buffers the graph reads, so a new
//! block length rewrites them without touching the graphs of other lengths.

use super::{sequential_max_frames, CudaDevice, CudaError, DIRECT_MAX_TAPS, MAX_CUDA_FIR_TAPS};
use crate::chain::{DesignedChain, DesignedStage};
use crate::engine::ChainState;
use crate::gpu::realize::{chunking, fft_partition_for, partition_spectra, realize_cascade, Realization, SCAN_STEPS};
use crate::gpu::GpuError;
use cudarc::driver::{sys, CudaGraph, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PinnedHostSlice, PushKernelArg};
use std::sync::Arc;

/// `fx_sos_params` of kernels/sos_math.h.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct SosParams {
    frames: u32,
    chunk_len: u32,
    chunks: u32,
    stride: u32,
    first: u32,
    count: u32,
    state_base: u32,
    channels: u32,
}
// SAFETY: plain 32-bit fields, `#[repr(C)]`, laid out as the kernels' struct.
unsafe impl DeviceRepr for SosParams {}

/// `fx_fir_params` of kernels/fir_math.h.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct FirParams {
    frames: u32,
    taps: u32,
    stride: u32,
    tap_base: u32,
    hist_base: u32,
    channels: u32,
    pad0: u32,
    pad1: u32,
}
// SAFETY: as above.
unsafe impl DeviceRepr for FirParams {}

/// `fx_fft_params` of kernels/fft_math.h.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct FftParams {
    n: u32,
    half_span: u32,
    r: u32,
    tw_scale: u32,
    part: u32,
    pcount: u32,
    segs: u32,
    outs: u32,
    taps: u32,
    frames: u32,
    stride: u32,
    hist_base: u32,
    kernel_base: u32,
    channels: u32,
    pad0: u32,
    pad1: u32,
}
// SAFETY: as above.
unsafe impl DeviceRepr for FftParams {}

/// An FFT-partitioned FIR stage: partitions of `part` taps, FFTs of `2 part` points.
#[derive(Clone, Copy)]
struct FftPlan {
    part: usize,
    pcount: usize,
    log2n: usize,
    /// This stage's first bin in the kernel spectra.
    kernel_base: usize,
}

/// Threads per block of the scan and FIR kernels (`FX_SOS_THREADS`, `FX_FIR_TILE`).
const BLOCK_THREADS: u32 = 256;
/// Threads per block of the channel-parallel kernel.
const CHANNEL_THREADS: u32 = 64;
/// Graphs kept, one per block length and staging slot (a stream's last block is usually
/// shorter).
const GRAPHS_KEPT: usize = 4;

/// A captured graph, owned by one chain.
struct Graph(CudaGraph);
// SAFETY: CUDA graph objects may be used from any thread as long as no two threads use
// one at the same time (CUDA's graph thread-safety rules); a chain owns its graphs and
// uses them only through `&mut self`, so moving the chain to another thread (the offload
// worker) is sound. cudarc binds the context to the calling thread before each launch.
unsafe impl Send for Graph {}

enum Plan {
    Sos { first: usize, count: usize },
    Fir { tap_base: usize, taps: usize, hist_base: usize, fft: Option<FftPlan> },
}

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
    tmp: CudaSlice<f32>,
    sections: CudaSlice<f32>,
    tables: CudaSlice<f32>,
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
    /// Pinned host staging: the block (`channels x max_frames`), then the SOS states
    /// (2 per section and channel), then the FIR histories.
    pinned: PinnedHostSlice<f32>,
    fir_len: usize,
    table_chunk_len: usize,
    table_scratch: Vec<f32>,
    sequential_max: usize,
    /// Captured graphs by block length; `None` once capture failed (plain launches then).
    graphs: Option<Vec<((usize, usize), Graph)>>,
    graph_note: String,
}

fn gpu(e: GpuError) -> CudaError {
    CudaError::Gpu(e)
}

impl CudaChain {
    /// Buffers and plan for `chain`, or why it does not run here (a cascade whose float32
    /// form misses the tolerance, a FIR longer than [`MAX_CUDA_FIR_TAPS`]).
    pub fn new(dev: &Arc<CudaDevice>, chain: &DesignedChain, channels: usize, max_frames: usize) -> Result<CudaChain, CudaError> {
        let channels = channels.max(1);
        let max_frames = max_frames.max(1);
        if channels > 65_535 {
            return Err(gpu(GpuError::Unsupported { what: format!("{channels} channels") }));
        }
        let mut realizations = Vec::new();
        let mut taps_all: Vec<f32> = Vec::new();
        let mut plans = Vec::new();
        let mut fir_len = 0usize;
        let mut kernel_spectra: Vec<[f32; 2]> = Vec::new();
        let mut spec_len = 0usize;
        let sequential_max = sequential_max_frames();
        for (index, stage) in chain.stages.iter().enumerate() {
            match stage {
                DesignedStage::Sos(sections) => {
                    // Exact or declined: the CPU keeps a cascade float32 would miss.
                    let delta = realize_cascade(sections, index, max_frames, sequential_max)?;
                    plans.push(Plan::Sos { first: realizations.len(), count: sections.len() });
                    realizations.extend(delta);
                }
                DesignedStage::Fir(taps) => {
                    if taps.len() > MAX_CUDA_FIR_TAPS {
                        return Err(gpu(GpuError::Unsupported {
                            what: format!(
                                "stage {index}: a FIR of {} taps (the CUDA backend runs FIRs up to {MAX_CUDA_FIR_TAPS} taps, by direct convolution; the CPU runs longer ones by FFT)",
                                taps.len()
                            ),
                        }));
                    }
                    let n = taps.len().max(1);
                    let fft = (n > DIRECT_MAX_TAPS).then(|| {
                        let part = fft_partition_for(n);
                        let plan = FftPlan { part, pcount: n.div_ceil(part), log2n: (2 * part).trailing_zeros() as usize, kernel_base: kernel_spectra.len() };
                        kernel_spectra.extend(partition_spectra(taps, part));
                        spec_len = spec_len.max(channels * (max_frames.div_ceil(part) + plan.pcount) * 2 * part);
                        plan
                    });
                    if let Some(plan) = fft {
                        let rows = channels * (max_frames.div_ceil(plan.part) + plan.pcount);
                        if rows > 65_535 {
                            return Err(gpu(GpuError::Unsupported {
                                what: format!("stage {index}: {rows} FFT segments in one launch (at most 65,535): fewer channels or a shorter block"),
                            }));
                        }
                    }
                    plans.push(Plan::Fir { tap_base: taps_all.len(), taps: n, hist_base: fir_len, fft });
                    taps_all.extend(taps.iter().map(|&t| t as f32));
                    if taps.is_empty() {
                        taps_all.push(0.0);
                    }
                    fir_len += channels * (n - 1);
                }
            }
        }
        let stream = dev.stream()?;
        let total = realizations.len();
        let block = channels * max_frames;
        let zeros = |n: usize| stream.alloc_zeros::<f32>(n.max(1));
        let records: Vec<f32> = realizations.iter().flat_map(|r| r.to_gpu().words()).collect();
        let mut sections = zeros(records.len())?;
        let mut taps = zeros(taps_all.len())?;
        if !records.is_empty() {
            stream.memcpy_htod(&records, &mut sections)?;
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
        // SAFETY: page-locked host memory for the staging buffer, two slots so the host
        // stages one job while the device runs the other. The host reads or writes a slot
        // only while no copy that uses it is in flight: a slot's job is synchronised
        // before the slot is read back or reused (`process`, `process_slices`).
        let pinned = unsafe { dev.ctx.alloc_pinned::<f32>(2 * (block + 2 * channels * total + fir_len)) }?;
        let chain = CudaChain {
            work: zeros(block)?,
            tmp: zeros(block)?,
            tables: zeros(total * SCAN_STEPS * 4)?,
            states: zeros(2 * channels * total)?,
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
            sequential_max,
            graphs: Some(Vec::new()),
            graph_note: String::new(),
        };
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
        let channels = self.channels;
        if frames == 0 {
            return Ok(());
        }
        if data.len() < channels * frames {
            return Err(gpu(GpuError::Job {
                why: format!("{} samples for {channels} channels x {frames} frames (largest block {})", data.len(), self.max_frames),
            }));
        }
        self.check_job(frames, state)?;
        {
            let host = self.slot_mut(0)?;
            host[..channels * frames].copy_from_slice(&data[..channels * frames]);
        }
        self.stage_state(0, state)?;
        self.launch(0, frames)?;
        self.stream.synchronize()?;
        let host = self.slot(0)?;
        data[..channels * frames].copy_from_slice(&host[..channels * frames]);
        self.read_state(0, state)
    }

    /// Filters the channel slices (as many frames as the shortest holds) in place, in
    /// blocks of up to `max_frames`, from `state` (left at the end state). The host's
    /// copies into and out of pinned memory overlap the device's work: two staging slots
    /// take turns, so block k+1 is copied in (and block k-1 out) while the device runs
    /// block k from the other slot.
    pub fn process_slices(&mut self, buffers: &mut [&mut [f32]], state: &mut ChainState) -> Result<(), CudaError> {
        let channels = self.channels;
        let frames = buffers.iter().map(|b| b.len()).min().unwrap_or(0);
        if buffers.len() != channels {
            return Err(gpu(GpuError::Job { why: format!("{} channel buffers for a chain of {channels} channels", buffers.len()) }));
        }
        if frames == 0 {
            return Ok(());
        }
        self.check_job(1, state)?;
        let max = self.max_frames;
        let blocks: Vec<(usize, usize)> = (0..frames).step_by(max).map(|s| (s, max.min(frames - s))).collect();
        let stage_in = |chain: &mut CudaChain, slot: usize, (start, len): (usize, usize), buffers: &[&mut [f32]]| -> Result<(), CudaError> {
            let host = chain.slot_mut(slot)?;
            for (c, b) in buffers.iter().enumerate() {
                host[c * len..(c + 1) * len].copy_from_slice(&b[start..start + len]);
            }
            Ok(())
        };
        stage_in(self, 0, blocks[0], buffers)?;
        self.stage_state(0, state)?;
        self.launch(0, blocks[0].1)?;
        for k in 1..=blocks.len() {
            let (slot, prev) = (k % 2, (k - 1) % 2);
            if k < blocks.len() {
                // Overlaps the device's work on block k-1.
                stage_in(self, slot, blocks[k], buffers)?;
            }
            self.stream.synchronize()?;
            self.read_state(prev, state)?;
            if k < blocks.len() {
                self.stage_state(slot, state)?;
                self.launch(slot, blocks[k].1)?;
            }
            // Overlaps the device's work on block k.
            let (start, len) = blocks[k - 1];
            let host = self.slot(prev)?;
            for (c, b) in buffers.iter_mut().enumerate() {
                b[start..start + len].copy_from_slice(&host[c * len..(c + 1) * len]);
            }
        }
        Ok(())
    }

    /// Whether a job of `frames` frames from `state` fits this chain.
    fn check_job(&self, frames: usize, state: &ChainState) -> Result<(), CudaError> {
        let (channels, total) = (self.channels, self.realizations.len());
        if frames > self.max_frames {
            return Err(gpu(GpuError::Job { why: format!("{frames} frames (largest block {})", self.max_frames) }));
        }
        if state.sos.len() != channels * total || state.fir.len() != self.fir_len {
            return Err(gpu(GpuError::Job {
                why: format!(
                    "state of {} SOS and {} FIR samples, the chain needs {} and {}",
                    state.sos.len(),
                    state.fir.len(),
                    channels * total,
                    self.fir_len
                ),
            }));
        }
        Ok(())
    }

    /// Floats in one staging slot: the block, the SOS states, the FIR histories.
    fn slot_len(&self) -> usize {
        self.channels * self.max_frames + 2 * self.channels * self.realizations.len() + self.fir_len
    }

    fn slot(&self, slot: usize) -> Result<&[f32], CudaError> {
        let n = self.slot_len();
        Ok(&self.pinned.as_slice()?[slot * n..(slot + 1) * n])
    }

    fn slot_mut(&mut self, slot: usize) -> Result<&mut [f32], CudaError> {
        let n = self.slot_len();
        Ok(&mut self.pinned.as_mut_slice()?[slot * n..(slot + 1) * n])
    }

    /// `state` into a slot, each section's in its delta form, the FIR histories as they are.
    fn stage_state(&mut self, slot: usize, state: &ChainState) -> Result<(), CudaError> {
        let (channels, total, block, fir_len) = (self.channels, self.realizations.len(), self.channels * self.max_frames, self.fir_len);
        let n = self.slot_len();
        let host = &mut self.pinned.as_mut_slice()?[slot * n..(slot + 1) * n];
        let mut at = 0;
        for plan in &self.plans {
            if let Plan::Sos { first, count } = *plan {
                for _ in 0..channels {
                    for r in &self.realizations[first..first + count] {
                        let s = r.state_to_gpu(state.sos[at]);
                        host[block + 2 * at..block + 2 * at + 2].copy_from_slice(&s);
                        at += 1;
                    }
                }
            }
        }
        let hist = block + 2 * channels * total;
        host[hist..hist + fir_len].copy_from_slice(&state.fir);
        Ok(())
    }

    /// The end state of the job last run from `slot` (after its stream synchronised).
    fn read_state(&self, slot: usize, state: &mut ChainState) -> Result<(), CudaError> {
        let (channels, total, block) = (self.channels, self.realizations.len(), self.channels * self.max_frames);
        let host = self.slot(slot)?;
        let mut at = 0;
        for plan in &self.plans {
            if let Plan::Sos { first, count } = *plan {
                for _ in 0..channels {
                    let start = at;
                    for r in &self.realizations[first..first + count] {
                        state.sos[at] = r.state_from_gpu([host[block + 2 * at], host[block + 2 * at + 1]]);
                        at += 1;
                    }
                    crate::dsp::sos::sanitize_state(&mut state.sos[start..at]);
                }
            }
        }
        let hist = block + 2 * channels * total;
        for (o, &v) in state.fir.iter_mut().zip(&host[hist..hist + self.fir_len]) {
            *o = if v.is_finite() { v } else { 0.0 };
        }
        Ok(())
    }

    /// Enqueues the job staged in `slot` (`frames` frames): the scan tables for its chunk
    /// length where they changed, then its graph (upload, kernels, download). Returns
    /// before the device is done; synchronise the stream before reading the slot.
    fn launch(&mut self, slot: usize, frames: usize) -> Result<(), CudaError> {
        let total = self.realizations.len();
        let (chunks, chunk_len) = chunking(frames, self.sequential_max);
        if chunks > 1 && chunk_len != self.table_chunk_len && total > 0 {
            for (r, out) in self.realizations.iter().zip(self.table_scratch.chunks_exact_mut(SCAN_STEPS * 4)) {
                for (k, m) in r.scan_table(chunk_len).iter().enumerate() {
                    out[4 * k..4 * k + 4].copy_from_slice(m);
                }
            }
            // Stream-ordered after the jobs already enqueued, which read the old tables.
            self.stream.memcpy_htod(&self.table_scratch, &mut self.tables)?;
            self.table_chunk_len = chunk_len;
        }
        // The slot's address, taken before any capture (taking it synchronises on the
        // buffer's event, which a capturing stream must not see).
        let n = self.slot_len();
        let base = self.pinned.as_mut_ptr()?;
        // SAFETY: the allocation holds two slots of `n` floats.
        let base = unsafe { base.add(slot * n) };
        self.run(frames, slot, chunks, chunk_len, base)
    }

    /// The job's device work: a graph replay, or a capture then replay, or plain launches
    /// where capture failed.
    fn run(&mut self, frames: usize, slot: usize, chunks: usize, chunk_len: usize, base: *mut f32) -> Result<(), CudaError> {
        let Some(graphs) = self.graphs.as_mut() else {
            return self.enqueue(frames, chunks, chunk_len, base);
        };
        if let Some((_, graph)) = graphs.iter().find(|(key, _)| *key == (frames, slot)) {
            graph.0.launch()?;
            return Ok(());
        }
        self.stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        let enqueued = self.enqueue(frames, chunks, chunk_len, base);
        let captured = self.stream.end_capture(sys::CUgraphInstantiate_flags(0));
        match (enqueued, captured) {
            (Ok(()), Ok(Some(graph))) => {
                graph.launch()?;
                let graphs = self.graphs.get_or_insert_with(Vec::new);
                if graphs.len() == GRAPHS_KEPT {
                    graphs.remove(0);
                }
                graphs.push(((frames, slot), Graph(graph)));
                Ok(())
            }
            (enqueued, captured) => {
                // Capture is an optimisation: where the driver refuses it, launch plainly.
                self.graph_note = format!(
                    "graph capture failed ({}), kernels are launched one by one",
                    match (&enqueued, &captured) {
                        (Err(e), _) => e.to_string(),
                        (_, Err(e)) => e.to_string(),
                        _ => "no graph".to_string(),
                    }
                );
                self.graphs = None;
                self.enqueue(frames, chunks, chunk_len, base)
            }
        }
    }

    /// Upload, every stage's kernels, download, on the chain's stream; `base` is the
    /// pinned staging buffer's address.
    fn enqueue(&mut self, frames: usize, chunks: usize, chunk_len: usize, base: *mut f32) -> Result<(), CudaError> {
        let CudaChain {
            dev, stream, channels, max_frames, plans, realizations, work, tmp, sections, tables, states, taps, history, hist_out, fir_len, kernel, twiddles, spec_a, spec_b, n_max, ..
        } = self;
        let (channels, fir_len) = (*channels, *fir_len);
        let n = channels * frames;
        let block = channels * *max_frames;
        let ns = 2 * channels * realizations.len();
        // SAFETY: `base` points to a staging slot of `block + ns + fir_len` floats in the
        // pinned allocation; these views only hand its addresses to the asynchronous copies
        // below, and the host touches that slot again only after the stream is synchronised.
        let (host_block, host_states, host_hist) = unsafe {
            (
                std::slice::from_raw_parts_mut(base, n),
                std::slice::from_raw_parts_mut(base.add(block), ns),
                std::slice::from_raw_parts_mut(base.add(block + ns), fir_len),
            )
        };
        stream.memcpy_htod(&*host_block, &mut work.slice_mut(..n))?;
        if ns > 0 {
            stream.memcpy_htod(&*host_states, &mut states.slice_mut(..ns))?;
        }
        if fir_len > 0 {
            stream.memcpy_htod(&*host_hist, &mut history.slice_mut(..fir_len))?;
        }
        let mut state_base = 0usize;
        for plan in plans.iter() {
            match *plan {
                Plan::Sos { first, count } => {
                    if count == 0 {
                        continue;
                    }
                    let p = SosParams {
                        frames: frames as u32,
                        chunk_len: chunk_len as u32,
                        chunks: chunks as u32,
                        stride: frames as u32,
                        first: first as u32,
                        count: count as u32,
                        state_base: state_base as u32,
                        channels: channels as u32,
                    };
                    state_base += channels * count;
                    if chunks == 1 {
                        let cfg = LaunchConfig {
                            grid_dim: ((channels as u32).div_ceil(CHANNEL_THREADS), 1, 1),
                            block_dim: (CHANNEL_THREADS, 1, 1),
                            shared_mem_bytes: 0,
                        };
                        let mut launch = stream.launch_builder(&dev.sos_channels);
                        launch.arg(&p).arg(&mut *work).arg(&*sections).arg(&mut *states);
                        // SAFETY: the arguments match ferrofx_sos_channels(fx_sos_params,
                        // float*, const fx_section*, fx_vec2*); `work` holds channels x
                        // frames, `sections` every section, `states` 2 floats per section
                        // and channel, the indices the kernel forms from `p`.
                        unsafe { launch.launch(cfg) }?;
                    } else {
                        let cfg = LaunchConfig { grid_dim: (channels as u32, 1, 1), block_dim: (BLOCK_THREADS, 1, 1), shared_mem_bytes: 0 };
                        let mut launch = stream.launch_builder(&dev.sos_scan);
                        launch.arg(&p).arg(&mut *work).arg(&*sections).arg(&*tables).arg(&mut *states);
                        // SAFETY: as above for ferrofx_sos_scan, plus `tables` with
                        // SCAN_STEPS 2x2 entries per section; chunks <= 256 threads.
                        unsafe { launch.launch(cfg) }?;
                    }
                }
                Plan::Fir { tap_base, taps: count, hist_base, fft } => {
                    let p = FirParams {
                        frames: frames as u32,
                        taps: count as u32,
                        stride: frames as u32,
                        tap_base: tap_base as u32,
                        hist_base: hist_base as u32,
                        channels: channels as u32,
                        pad0: 0,
                        pad1: 0,
                    };
                    if let Some(plan) = fft {
                        let fp = FftParams {
                            n: (2 * plan.part) as u32,
                            tw_scale: (*n_max / (2 * plan.part)) as u32,
                            part: plan.part as u32,
                            pcount: plan.pcount as u32,
                            segs: (frames.div_ceil(plan.part) + plan.pcount) as u32,
                            outs: frames.div_ceil(plan.part) as u32,
                            taps: count as u32,
                            frames: frames as u32,
                            stride: frames as u32,
                            hist_base: hist_base as u32,
                            kernel_base: plan.kernel_base as u32,
                            channels: channels as u32,
                            ..FftParams::default()
                        };
                        enqueue_fft(dev, stream, &fp, plan.log2n, work, history, kernel, twiddles, spec_a, spec_b, tmp)?;
                    } else {
                        let cfg = LaunchConfig {
                            grid_dim: ((frames as u32).div_ceil(BLOCK_THREADS), channels as u32, 1),
                            block_dim: (BLOCK_THREADS, 1, 1),
                            shared_mem_bytes: 0,
                        };
                        let mut launch = stream.launch_builder(&dev.fir_direct);
                        launch.arg(&p).arg(&*work).arg(&*taps).arg(&*history).arg(&mut *tmp);
                        // SAFETY: the arguments match ferrofx_fir_direct(fx_fir_params,
                        // const float*, const float*, const float*, float*); every buffer
                        // covers the indices the kernel forms from `p` (checked when built).
                        unsafe { launch.launch(cfg) }?;
                    }
                    let hist = count - 1;
                    if hist > 0 {
                        let cfg = LaunchConfig {
                            grid_dim: ((hist as u32).div_ceil(BLOCK_THREADS), channels as u32, 1),
                            block_dim: (BLOCK_THREADS, 1, 1),
                            shared_mem_bytes: 0,
                        };
                        let mut launch = stream.launch_builder(&dev.fir_history);
                        launch.arg(&p).arg(&*work).arg(&*history).arg(&mut *hist_out);
                        // SAFETY: as above for ferrofx_fir_history.
                        unsafe { launch.launch(cfg) }?;
                    }
                    stream.memcpy_dtod(&tmp.slice(..n), &mut work.slice_mut(..n))?;
                    if hist > 0 {
                        let range = hist_base..hist_base + channels * hist;
                        stream.memcpy_dtod(&hist_out.slice(range.clone()), &mut history.slice_mut(range))?;
                    }
                }
            }
        }
        stream.memcpy_dtoh(&work.slice(..n), host_block)?;
        if ns > 0 {
            stream.memcpy_dtoh(&states.slice(..ns), host_states)?;
        }
        if fir_len > 0 {
            stream.memcpy_dtoh(&history.slice(..fir_len), host_hist)?;
        }
        Ok(())
    }
}

/// One FFT-partitioned FIR stage's launches: segments, the forward FFT passes, the
/// multiply-accumulate with the partitions' spectra, the inverse passes, extract into
/// `out` (kernels/fft_fir.cu; the per-thread math is tested on the host).
#[allow(clippy::too_many_arguments)]
fn enqueue_fft(
    dev: &CudaDevice,
    stream: &Arc<CudaStream>,
    p: &FftParams,
    log2n: usize,
    work: &CudaSlice<f32>,
    history: &CudaSlice<f32>,
    kernel: &CudaSlice<f32>,
    twiddles: &CudaSlice<f32>,
    spec_a: &mut CudaSlice<f32>,
    spec_b: &mut CudaSlice<f32>,
    out: &mut CudaSlice<f32>,
) -> Result<(), CudaError> {
    let cfg = |x: u32, y: u32, z: u32| LaunchConfig { grid_dim: (x, y, z), block_dim: (BLOCK_THREADS, 1, 1), shared_mem_bytes: 0 };
    let n = p.n;
    let mut launch = stream.launch_builder(&dev.fft_segments);
    launch.arg(p).arg(work).arg(history).arg(&mut *spec_a);
    // SAFETY: ferrofx_fft_segments(fx_fft_params, const float*, const float*, fx_vec2*):
    // `spec_a` holds channels x segs x n points (sized for the largest block when built).
    unsafe { launch.launch(cfg(n / BLOCK_THREADS, p.segs, p.channels)) }?;
    // `in_a`: the data is in spec_a.
    let mut in_a = true;
    for inverse in [false, true] {
        let rows = p.channels * if inverse { p.outs } else { p.segs };
        for q in 1..=log2n {
            let stage = FftParams { half_span: 1 << (q - 1), r: n >> q, ..*p };
            let (src, dst) = if in_a { (&*spec_a, &mut *spec_b) } else { (&*spec_b, &mut *spec_a) };
            let mut launch = stream.launch_builder(&dev.fft_pass);
            launch.arg(&stage).arg(twiddles).arg(src).arg(dst);
            // SAFETY: ferrofx_fft_pass(fx_fft_params, const fx_vec2*, const fx_vec2*,
            // fx_vec2*): `rows` transforms of n points in each buffer, n/2 twiddles x scale.
            unsafe { launch.launch(cfg((n / 2).div_ceil(BLOCK_THREADS), rows, 1)) }?;
            in_a = !in_a;
        }
        if !inverse {
            let (src, dst) = if in_a { (&*spec_a, &mut *spec_b) } else { (&*spec_b, &mut *spec_a) };
            let mut launch = stream.launch_builder(&dev.fft_mac);
            launch.arg(p).arg(src).arg(kernel).arg(dst);
            // SAFETY: ferrofx_fft_mac(fx_fft_params, const fx_vec2*, const fx_vec2*,
            // fx_vec2*): the stage's pcount x n kernel bins from kernel_base.
            unsafe { launch.launch(cfg(n / BLOCK_THREADS, p.outs, p.channels)) }?;
            in_a = !in_a;
        }
    }
    let src = if in_a { &*spec_a } else { &*spec_b };
    let mut launch = stream.launch_builder(&dev.fft_extract);
    launch.arg(p).arg(src).arg(out);
    // SAFETY: ferrofx_fft_extract(fx_fft_params, const fx_vec2*, float*): `out` holds
    // channels x frames samples at stride `frames`.
    unsafe { launch.launch(cfg(p.part.div_ceil(BLOCK_THREADS), p.outs, p.channels)) }?;
    Ok(())
}
