//! A chain's device work per job: the kernels' parameter blocks, the upload, every
//! stage's launches and the download, captured once per block length and staging slot as
//! a CUDA graph and replayed (plain launches where capture fails). Every launch carries
//! its `// SAFETY:` note: the arguments match the kernel's C signature and every buffer
//! covers the indices the kernel forms from its parameters.

use super::{CudaChain, Plan};
use crate::gpu::cuda::{CudaDevice, CudaError};
use crate::gpu::realize::{chunking, GpuPrecision, SCAN_STEPS};
use cudarc::driver::{sys, CudaGraph, CudaSlice, CudaStream, CudaView, DeviceRepr, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// `fx_sos_params` of kernels/sos_math.h (also launched by `gpu::cuda::sos64`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::gpu::cuda) struct SosParams {
    pub frames: u32,
    pub chunk_len: u32,
    pub chunks: u32,
    pub stride: u32,
    pub first: u32,
    pub count: u32,
    pub state_base: u32,
    pub channels: u32,
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

/// Threads per block of the scan and FIR kernels (`FX_SOS_THREADS`, `FX_FIR_TILE`).
pub(super) const BLOCK_THREADS: u32 = 256;
/// Threads per block of the channel-parallel kernel.
const CHANNEL_THREADS: u32 = 64;
/// Graphs kept, one per block length and staging slot or work buffer (a stream's last
/// block is usually shorter).
const GRAPHS_KEPT: usize = 8;

/// What one graph (or one series of plain launches) holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Work {
    /// A whole job: its state and block uploaded from staging slot `slot` (at `base`) in
    /// one copy, the kernels on the job buffer (`io`, laid out as the slot), the state and
    /// block downloaded to the slot in one copy.
    Job { base: *mut f32, slot: usize },
    /// The kernels alone, on work buffer 0 or 1 (the overlapped stream: its copies run on
    /// their own streams, the state stays on the device).
    Kernels(usize),
}

impl Work {
    /// The graph's key beside the block length: the staging slot, or past the slots,
    /// the buffer.
    fn key(self) -> usize {
        match self {
            Work::Job { slot, .. } => slot,
            Work::Kernels(buf) => super::STAGING_SLOTS + buf,
        }
    }
}

/// A captured graph, owned by one chain.
pub(super) struct Graph(CudaGraph);
// SAFETY: CUDA graph objects may be used from any thread as long as no two threads use
// one at the same time (CUDA's graph thread-safety rules); a chain owns its graphs and
// uses them only through `&mut self`, so moving the chain to another thread (the offload
// worker) is sound. cudarc binds the context to the calling thread before each launch.
unsafe impl Send for Graph {}

impl CudaChain {
    /// Enqueues the job staged in `slot` (`frames` frames): the scan tables for its chunk
    /// length where they changed, then its graph (upload, kernels, download). Returns
    /// before the device is done; synchronise the stream before reading the slot.
    pub(super) fn launch(&mut self, slot: usize, frames: usize) -> Result<(), CudaError> {
        let (chunks, chunk_len) = self.scan_tables_for(frames)?;
        // The slot's address, taken before any capture (taking it synchronises on the
        // buffer's event, which a capturing stream must not see).
        let base = self.slot_ptr(slot)?;
        self.run(frames, chunks, chunk_len, Work::Job { base, slot })
    }

    /// Enqueues the kernels alone for a block of `frames` frames in work buffer `buf`
    /// (the overlapped stream's copies and state are its own business).
    pub(super) fn launch_kernels(&mut self, buf: usize, frames: usize) -> Result<(), CudaError> {
        let (chunks, chunk_len) = self.scan_tables_for(frames)?;
        self.run(frames, chunks, chunk_len, Work::Kernels(buf))
    }

    /// Staging slot `slot`'s address in the pinned allocation.
    pub(super) fn slot_ptr(&mut self, slot: usize) -> Result<*mut f32, CudaError> {
        assert!(slot < super::STAGING_SLOTS, "staging slot {slot}");
        let n = self.slot_len();
        let base = self.pinned.as_mut_ptr()?;
        // SAFETY: the allocation holds STAGING_SLOTS slots of `n` floats (`slot` < that).
        Ok(unsafe { base.add(slot * n) })
    }

    /// The chunking of a block of `frames` frames (a resident chain's is fixed: its
    /// unit's); the scan tables for its chunk length written to the device first where
    /// they changed.
    fn scan_tables_for(&mut self, frames: usize) -> Result<(usize, usize), CudaError> {
        let total = self.realizations.len();
        let (chunks, chunk_len) = self.fixed_chunking.unwrap_or_else(|| chunking(frames, self.sequential_limit()));
        if chunks > 1 && chunk_len != self.table_chunk_len && total > 0 {
            // Every section's tables, in float64 too where a cascade runs in float64 (new
            // coefficients that change a precision clear `table_chunk_len`, so the tables
            // are written again before the next scanned job).
            let float64 = self.plans.iter().any(|p| matches!(p, Plan::Sos { precision: GpuPrecision::F64, .. }));
            let scratch = self.table_scratch.chunks_exact_mut(SCAN_STEPS * 4).zip(self.table_scratch64.chunks_exact_mut(SCAN_STEPS * 4));
            for (r, (out, out64)) in self.realizations.iter().zip(scratch) {
                for (k, m) in r.scan_table(chunk_len).iter().enumerate() {
                    out[4 * k..4 * k + 4].copy_from_slice(m);
                }
                if float64 {
                    for (k, m) in r.scan_table_as::<f64>(chunk_len).iter().enumerate() {
                        out64[4 * k..4 * k + 4].copy_from_slice(m);
                    }
                }
            }
            // Stream-ordered after the jobs already enqueued, which read the old tables.
            self.stream.memcpy_htod(&self.table_scratch, &mut self.tables)?;
            if float64 {
                self.stream.memcpy_htod(&self.table_scratch64, &mut self.tables64)?;
            }
            self.table_chunk_len = chunk_len;
        }
        Ok((chunks, chunk_len))
    }

    /// The device work: a graph replay, or a capture then replay, or plain launches
    /// where capture failed.
    fn run(&mut self, frames: usize, chunks: usize, chunk_len: usize, what: Work) -> Result<(), CudaError> {
        let key = what.key();
        let Some(graphs) = self.graphs.as_mut() else {
            return self.enqueue(frames, chunks, chunk_len, what);
        };
        if let Some((_, graph)) = graphs.iter().find(|(k, _)| *k == (frames, key)) {
            graph.0.launch()?;
            return Ok(());
        }
        self.stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        let enqueued = self.enqueue(frames, chunks, chunk_len, what);
        let captured = self.stream.end_capture(sys::CUgraphInstantiate_flags(0));
        match (enqueued, captured) {
            (Ok(()), Ok(Some(graph))) => {
                graph.launch()?;
                let graphs = self.graphs.get_or_insert_with(Vec::new);
                if graphs.len() == GRAPHS_KEPT {
                    graphs.remove(0);
                }
                graphs.push(((frames, key), Graph(graph)));
                self.captures += 1;
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
                self.enqueue(frames, chunks, chunk_len, what)
            }
        }
    }

    /// `what` on the chain's stream: a whole job (upload, every stage's kernels,
    /// download) or the kernels alone on one work buffer.
    fn enqueue(&mut self, frames: usize, chunks: usize, chunk_len: usize, what: Work) -> Result<(), CudaError> {
        // Whether the fused cascades run fused on this block (scanned blocks only).
        let fused_block = chunks > 1 && self.fused_block(frames);
        let CudaChain {
            dev,
            stream,
            channels,
            max_frames,
            plans,
            realizations,
            work,
            work2,
            io,
            wide,
            tmp,
            sections,
            tables,
            sections64,
            tables64,
            states,
            taps,
            history,
            hist_out,
            fir_len,
            kernel,
            twiddles,
            spec_a,
            spec_b,
            n_max,
            fused,
            pipe,
            ..
        } = self;
        let (channels, fir_len) = (*channels, *fir_len);
        let n = channels * frames;
        let block = channels * *max_frames;
        let ns = super::state_words(channels * realizations.len());
        // The float64 states' part of `states` (after the float32 states' 2 per section).
        let f64_states_at = 2 * channels * realizations.len();
        let layout = super::staging::SlotLayout::new(ns, fir_len, block);
        // A job's slot, the states and histories and the block's first `n` samples: one
        // run of memory, one copy each way into and out of `io` (laid out the same).
        let host = match what {
            // SAFETY: `base` points to a staging slot of `layout.len()` floats in the
            // pinned allocation; this view only hands its addresses to the asynchronous
            // copies below, and the host touches that slot again only after the stream is
            // synchronised.
            Work::Job { base, .. } => Some(unsafe { std::slice::from_raw_parts_mut(base, layout.copied(n)) }),
            Work::Kernels(_) => None,
        };
        if let Some(host) = &host {
            stream.memcpy_htod(&**host, &mut io.slice_mut(..host.len()))?;
        }
        // The buffers the kernels run on: a job's parts of `io` (its states and histories
        // split from `io_head`, which outlives them), or the overlapped stream's and
        // resident calls' own.
        let mut io_head;
        let (mut work, mut states, mut history) = match what {
            Work::Job { .. } => {
                let block_part;
                (io_head, block_part) = io.split_at_mut(layout.block.start);
                let (states_part, history_part) = io_head.split_at_mut(layout.history.start);
                (block_part, states_part, history_part)
            }
            Work::Kernels(1) => (work2.as_view_mut(), states.as_view_mut(), history.as_view_mut()),
            Work::Kernels(_) => (work.as_view_mut(), states.as_view_mut(), history.as_view_mut()),
        };
        let (work, states, history) = (&mut work, &mut states, &mut history);
        let mut state_base = 0usize;
        // Stages before this one ran in a pipeline launch (sequential blocks only).
        let mut piped_until = 0usize;
        for (index, plan) in plans.iter().enumerate() {
            match *plan {
                Plan::Sos { count, .. } if index < piped_until => state_base += channels * count,
                Plan::Sos { first, count, precision } => {
                    if count == 0 {
                        continue;
                    }
                    if let Some(group) = pipe.group_at(index, if chunks == 1 { frames } else { usize::MAX }) {
                        super::pipe::enqueue_pipe(dev, stream, pipe, group, frames, channels, work, sections, states)?;
                        piped_until = group.stages.end;
                        state_base += channels * count;
                        continue;
                    }
                    if fused_block && fused.runs(index) {
                        super::fused::enqueue_fused(dev, stream, fused, index, (first, count, state_base), frames, channels, work, sections, states)?;
                        state_base += channels * count;
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
                    let cfg = if chunks == 1 {
                        LaunchConfig { grid_dim: ((channels as u32).div_ceil(CHANNEL_THREADS), 1, 1), block_dim: (CHANNEL_THREADS, 1, 1), shared_mem_bytes: 0 }
                    } else {
                        LaunchConfig { grid_dim: (channels as u32, 1, 1), block_dim: (BLOCK_THREADS, 1, 1), shared_mem_bytes: 0 }
                    };
                    match (precision, chunks == 1) {
                        (GpuPrecision::F32, true) => {
                            let mut launch = stream.launch_builder(&dev.sos_channels);
                            launch.arg(&p).arg(&mut *work).arg(&*sections).arg(&mut *states);
                            // SAFETY: the arguments match ferrofx_sos_channels(fx_sos_params,
                            // float*, const fx_section*, fx_vec2*); `work` holds channels x
                            // frames, `sections` every section, `states` 2 floats per section
                            // and channel from its start, the indices the kernel forms from `p`.
                            unsafe { launch.launch(cfg) }?;
                        }
                        (GpuPrecision::F32, false) => {
                            let mut launch = stream.launch_builder(&dev.sos_scan);
                            launch.arg(&p).arg(&mut *work).arg(&*sections).arg(&*tables).arg(&mut *states);
                            // SAFETY: as above for ferrofx_sos_scan, plus `tables` with
                            // SCAN_STEPS 2x2 entries per section; chunks <= 256 threads.
                            unsafe { launch.launch(cfg) }?;
                        }
                        (GpuPrecision::F64, sequential) => {
                            // A float64 cascade is only designed where `wide` was allocated
                            // for it (at construction or with the coefficients that made it).
                            if wide.len() < n {
                                return Err(CudaError::Gpu(crate::gpu::GpuError::Unsupported { what: "a float64 cascade without its sample buffer".into() }));
                            }
                            let mut f64_states = states.slice_mut(f64_states_at..);
                            let mut launch = stream.launch_builder(if sequential { &dev.sos64_channels } else { &dev.sos64_scan });
                            launch.arg(&p).arg(&mut *work).arg(&mut *wide).arg(&*sections64);
                            if !sequential {
                                launch.arg(&*tables64);
                            }
                            launch.arg(&mut f64_states);
                            // SAFETY: the arguments match ferrofx_sos64_channels(fx_sos_params,
                            // float*, double*, const fx_section64*, fx_dvec2*) and
                            // ferrofx_sos64_scan (the same with const double* tables before
                            // the states); `wide` holds channels x frames doubles (checked
                            // above), `sections64` 12 doubles per section, `tables64`
                            // SCAN_STEPS 2x2 entries per section, and the states' view 4
                            // floats (2 doubles, 8-byte aligned: the offset is a multiple of
                            // 2 floats from a device allocation's start) per section and
                            // channel; chunks <= 256 threads.
                            unsafe { launch.launch(cfg) }?;
                        }
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
                        enqueue_fft(dev, stream, &fp, plan.log2n, &work.as_view(), &history.as_view(), kernel, twiddles, spec_a, spec_b, tmp)?;
                    } else {
                        let cfg = LaunchConfig {
                            grid_dim: ((frames as u32).div_ceil(BLOCK_THREADS), channels as u32, 1),
                            block_dim: (BLOCK_THREADS, 1, 1),
                            shared_mem_bytes: 0,
                        };
                        let (work_in, history_in) = (work.as_view(), history.as_view());
                        let mut launch = stream.launch_builder(&dev.fir_direct);
                        launch.arg(&p).arg(&work_in).arg(&*taps).arg(&history_in).arg(&mut *tmp);
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
                        let (work_in, history_in) = (work.as_view(), history.as_view());
                        let mut launch = stream.launch_builder(&dev.fir_history);
                        launch.arg(&p).arg(&work_in).arg(&history_in).arg(&mut *hist_out);
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
        if let Some(host) = host {
            let len = host.len();
            stream.memcpy_dtoh(&io.slice(..len), host)?;
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
    work: &CudaView<'_, f32>,
    history: &CudaView<'_, f32>,
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
