//! [`WgpuChain`]: a designed chain's buffers, bind groups and dispatch plan on a device,
//! and one job's round trip (write input and state, encode the stages, submit, read
//! back).

use super::fir::{encode_fft, write_fft_params, FftKit, FftPlan};
use super::{AdapterReport, WgpuContext};
use super::{sequential_max_for, JOB_TIMEOUT, PARAM_SLOT};
use crate::chain::DesignedChain;
use crate::engine::ChainState;
use crate::gpu::design::{GpuDesign, StageForm};
use crate::gpu::realize::{chunking, GpuPrecision, Realization, SCAN_STEPS};
use crate::gpu::GpuError;
use std::sync::mpsc;
use std::time::Duration;

/// The most iterations lavapipe runs of one loop of a shader invocation: llvmpipe's
/// gallivm stops a loop after 65,535 (`LP_MAX_TGSI_LOOP_ITERATIONS`), counted over every
/// entry of the loop in the invocation, and the samples after it are silently wrong. The
/// SOS shaders' sample loops run `sections x samples per invocation` times (measured here:
/// 4 sections x 16,384 samples sequential came out wrong from sample 16,368 on; 12 x 4,096
/// right, 12 x 8,192 wrong).
const SOFTWARE_LOOP_LIMIT: usize = 65_535;

/// On a software adapter, refuses a chain whose SOS sample loops would pass
/// [`SOFTWARE_LOOP_LIMIT`] for blocks up to `max_frames` (the sequential path's whole
/// block, the scan's chunk): exact, or a clear refusal.
fn software_loop_limit(stages: &[StageForm], max_frames: usize, sequential_max: usize) -> Result<(), GpuError> {
    let per_invocation = max_frames.min(sequential_max.max(1)).max(chunking(max_frames, sequential_max).1);
    for (index, stage) in stages.iter().enumerate() {
        if let StageForm::Sos { count, .. } = *stage {
            if count * per_invocation > SOFTWARE_LOOP_LIMIT {
                return Err(GpuError::Unsupported {
                    what: format!(
                        "cascade {index} ({count} sections) in blocks of {max_frames} frames on a software adapter: one shader loop would run {} times, and lavapipe stops loops after {SOFTWARE_LOOP_LIMIT} (use blocks of at most {} frames, or the CPU backend)",
                        count * per_invocation,
                        SOFTWARE_LOOP_LIMIT / count * crate::gpu::realize::MAX_CHUNKS
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Per-stage dispatch plan.
enum StagePlan {
    /// `bind64`: the float64 shader's bindings, on a device with float64 (a retune may
    /// move the cascade between precisions in place).
    Sos { first: usize, count: usize, bind: wgpu::BindGroup, bind64: Option<wgpu::BindGroup>, precision: GpuPrecision },
    Fir { tap_base: usize, taps: usize, hist_base: usize, bind: wgpu::BindGroup, fft: Option<FftPlan> },
}

/// A job submitted into a read-back slot.
#[derive(Clone, Copy)]
struct SlotJob {
    frames: usize,
    /// The end state was copied out too.
    with_state: bool,
}

/// A designed chain prepared on a device for `channels` channels and blocks of up to
/// `max_frames` frames.
pub struct WgpuChain {
    pub(super) ctx: WgpuContext,
    pub(super) channels: usize,
    pub(super) max_frames: usize,
    sos_pipeline: wgpu::ComputePipeline,
    /// The float64 SOS pipeline, when a cascade runs in float64.
    sos64_pipeline: Option<wgpu::ComputePipeline>,
    fir_pipeline: wgpu::ComputePipeline,
    hist_pipeline: wgpu::ComputePipeline,
    stages: Vec<StagePlan>,
    /// The stages' places in the buffers (new coefficients must fit them).
    pub(super) forms: Vec<StageForm>,
    pub(super) realizations: Vec<Realization>,
    pub(super) sections: wgpu::Buffer,
    /// Every section's float64 record (read by the float64 stages), when one runs in float64.
    pub(super) sections64: Option<wgpu::Buffer>,
    pub(super) taps: wgpu::Buffer,
    params: wgpu::Buffer,
    pub(super) work: wgpu::Buffer,
    tmp: wgpu::Buffer,
    tables: wgpu::Buffer,
    tables64: Option<wgpu::Buffer>,
    /// Every SOS state: the float32 states (`vec2<f32>`, one per channel and section) from
    /// 0, the float64 ones (`vec2<f64>`, the same indexing) from [`WgpuChain::states64_at`]
    /// when a cascade runs in float64. One buffer, so saving and restoring it keeps both.
    pub(super) states: wgpu::Buffer,
    states64_at: u64,
    /// The bytes of `states` in use.
    states_bytes: u64,
    pub(super) history: wgpu::Buffer,
    hist_out: wgpu::Buffer,
    /// Two read-back buffers, so a job can be submitted while the previous one's
    /// output is still to be read ([`WgpuChain::submit`], [`WgpuChain::collect`]).
    readback: [wgpu::Buffer; 2],
    /// Per read-back slot: the job submitted into it, if any.
    slots: [Option<SlotJob>; 2],
    /// Chunk length the tables were last written for.
    pub(super) table_chunk_len: usize,
    pub(super) fir_len: usize,
    /// Scratch for state conversion and tables.
    state_f32: Vec<[f32; 2]>,
    /// The float64 stages' states (empty without one), indexed as `state_f32`.
    state_f64: Vec<[f64; 2]>,
    table_scratch: Vec<[f32; 4]>,
    table_scratch64: Vec<[f64; 4]>,
    pub(super) sequential_max: usize,
    pub(super) fft: Option<FftKit>,
    /// A cascade changed precision in place: the next job must bring its state.
    pub(super) state_required: bool,
}

impl WgpuChain {
    /// Builds pipelines, buffers and bind groups for `chain`. FIR stages must have at most
    /// [`crate::gpu::design::MAX_FIR_TAPS`] taps.
    pub fn new(ctx: &WgpuContext, chain: &DesignedChain, channels: usize, max_frames: usize) -> Result<WgpuChain, GpuError> {
        let device = &ctx.device;
        let channels = channels.max(1);
        let max_frames = max_frames.max(1);
        if channels > 65_535 {
            return Err(GpuError::Unsupported { what: format!("{channels} channels") });
        }
        let sequential_max = sequential_max_for(ctx.report());
        let design = GpuDesign::new(chain, channels, max_frames, sequential_max, "wgpu", ctx.has_float64())?;
        if ctx.report().is_cpu() {
            software_loop_limit(&design.stages, max_frames, sequential_max)?;
        }
        let records = design.section_records();
        // On a device with float64 every chain gets the float64 buffers and bindings, so
        // new coefficients can move a cascade between precisions in place.
        let wide = ctx.has_float64();
        let records64 = if wide { design.section_records64() } else { Vec::new() };
        let GpuDesign { stages: forms, realizations, taps: taps_all, spectra: kernel_spectra, fir_len, spec_len } = design;
        // The FFT stages' parameter slots, one run after another.
        let mut fft_slots = 0usize;
        let fft_plans: Vec<Option<FftPlan>> = forms
            .iter()
            .map(|f| match *f {
                StageForm::Fir { fft: Some(form), .. } => {
                    let plan = FftPlan::new(form, fft_slots);
                    fft_slots += plan.slots();
                    Some(plan)
                }
                _ => None,
            })
            .collect();
        let total_sections = realizations.len();
        let work_bytes = (channels * max_frames * 4) as u64;
        // The float64 states from the next offset a storage binding may start at.
        let align = u64::from(ctx.limits.min_storage_buffer_offset_alignment).max(16);
        let states64_at = ((channels * total_sections * 8) as u64).div_ceil(align) * align;
        let state_bytes = if wide { states64_at + (channels * total_sections * 16) as u64 } else { (channels * total_sections * 8) as u64 };
        let hist_bytes = (fir_len * 4) as u64;
        let biggest = (if wide { 2 * work_bytes } else { work_bytes }).max(hist_bytes).max((taps_all.len() * 4) as u64).max((spec_len * 8) as u64);
        if biggest > ctx.limits.max_storage_buffer_binding_size {
            return Err(GpuError::Unsupported {
                what: format!(
                    "a buffer of {biggest} bytes ({channels} channels x {max_frames} frames, FIR history {fir_len} samples, FFT spectra {spec_len} bins); the adapter binds at most {}",
                    ctx.limits.max_storage_buffer_binding_size
                ),
            });
        }
        let buffer = |label: &str, size: u64, usage: wgpu::BufferUsages| {
            device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: size.max(16), usage, mapped_at_creation: false })
        };
        use wgpu::BufferUsages as U;
        let stages_n = forms.len().max(1) as u64;
        let params = buffer("params", stages_n * PARAM_SLOT, U::UNIFORM | U::COPY_DST);
        let work = buffer("work", work_bytes, U::STORAGE | U::COPY_DST | U::COPY_SRC);
        let tmp = buffer("tmp", work_bytes, U::STORAGE | U::COPY_SRC);
        let sections_buf = buffer("sections", (total_sections * 48) as u64, U::STORAGE | U::COPY_DST);
        let tables = buffer("tables", (total_sections * SCAN_STEPS * 16) as u64, U::STORAGE | U::COPY_DST);
        let states = buffer("states", state_bytes, U::STORAGE | U::COPY_DST | U::COPY_SRC);
        let taps_buf = buffer("taps", (taps_all.len() * 4) as u64, U::STORAGE | U::COPY_DST);
        let history = buffer("history", hist_bytes, U::STORAGE | U::COPY_DST | U::COPY_SRC);
        let hist_out = buffer("hist_out", hist_bytes, U::STORAGE | U::COPY_SRC);
        let readback = [0, 1].map(|_| buffer("readback", work_bytes + state_bytes + hist_bytes, U::MAP_READ | U::COPY_DST));

        ctx.queue.write_buffer(&sections_buf, 0, bytemuck::cast_slice(&records));
        // The float64 stages' buffers: records, tables and the cascade's float64 samples.
        let (sections64, tables64, wide_buf) = if wide {
            let s64 = buffer("sections64", (total_sections * 96) as u64, U::STORAGE | U::COPY_DST);
            ctx.queue.write_buffer(&s64, 0, bytemuck::cast_slice(&records64));
            let t64 = buffer("tables64", (total_sections * SCAN_STEPS * 32) as u64, U::STORAGE | U::COPY_DST);
            (Some(s64), Some(t64), Some(buffer("wide", 2 * work_bytes, U::STORAGE)))
        } else {
            (None, None, None)
        };
        ctx.queue.write_buffer(&taps_buf, 0, bytemuck::cast_slice(&taps_all));

        let pipes = ctx.pipelines();
        let (sos_layout, fir_layout) = (&pipes.sos_layout, &pipes.fir_layout);
        let sos_pipeline = pipes.sos.clone();
        let sos64 = wide.then(|| pipes.sos64(device));
        let sos64_pipeline = sos64.map(|p| p.pipeline.clone());
        let fir_pipeline = pipes.fir.clone();
        let hist_pipeline = pipes.hist.clone();

        fn whole(b: &wgpu::Buffer) -> wgpu::BindingResource<'_> {
            b.as_entire_binding()
        }
        let stages = forms
            .iter()
            .enumerate()
            .map(|(i, form)| {
                let param = wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &params,
                    offset: i as u64 * PARAM_SLOT,
                    size: std::num::NonZeroU64::new(32),
                });
                match *form {
                    StageForm::Sos { first, count, precision } => {
                        let bind64 = match (&sections64, &tables64, &wide_buf, sos64) {
                            (Some(s64), Some(t64), Some(w64), Some(p64)) => {
                                let states64 = wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                    buffer: &states,
                                    offset: states64_at,
                                    size: std::num::NonZeroU64::new((channels * total_sections * 16).max(16) as u64),
                                });
                                let param64 = wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                    buffer: &params,
                                    offset: i as u64 * PARAM_SLOT,
                                    size: std::num::NonZeroU64::new(32),
                                });
                                Some(device.create_bind_group(&wgpu::BindGroupDescriptor {
                                    label: Some("sos64 stage"),
                                    layout: &p64.layout,
                                    entries: &[
                                        wgpu::BindGroupEntry { binding: 0, resource: param64 },
                                        wgpu::BindGroupEntry { binding: 1, resource: whole(&work) },
                                        wgpu::BindGroupEntry { binding: 2, resource: whole(s64) },
                                        wgpu::BindGroupEntry { binding: 3, resource: whole(t64) },
                                        wgpu::BindGroupEntry { binding: 4, resource: states64 },
                                        wgpu::BindGroupEntry { binding: 5, resource: whole(w64) },
                                    ],
                                }))
                            }
                            _ => None,
                        };
                        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
                            label: Some("sos stage"),
                            layout: sos_layout,
                            entries: &[
                                wgpu::BindGroupEntry { binding: 0, resource: param },
                                wgpu::BindGroupEntry { binding: 1, resource: whole(&work) },
                                wgpu::BindGroupEntry { binding: 2, resource: whole(&sections_buf) },
                                wgpu::BindGroupEntry { binding: 3, resource: whole(&tables) },
                                wgpu::BindGroupEntry { binding: 4, resource: whole(&states) },
                            ],
                        });
                        StagePlan::Sos { first, count, bind, bind64, precision }
                    }
                    StageForm::Fir { tap_base, taps, hist_base, .. } => {
                        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
                            label: Some("fir stage"),
                            layout: fir_layout,
                            entries: &[
                                wgpu::BindGroupEntry { binding: 0, resource: param },
                                wgpu::BindGroupEntry { binding: 1, resource: whole(&work) },
                                wgpu::BindGroupEntry { binding: 2, resource: whole(&taps_buf) },
                                wgpu::BindGroupEntry { binding: 3, resource: whole(&history) },
                                wgpu::BindGroupEntry { binding: 4, resource: whole(&tmp) },
                                wgpu::BindGroupEntry { binding: 5, resource: whole(&hist_out) },
                            ],
                        });
                        StagePlan::Fir { tap_base, taps, hist_base, bind, fft: fft_plans[i] }
                    }
                }
            })
            .collect::<Vec<_>>();
        let fft = if fft_slots == 0 {
            None
        } else {
            let n_max = fft_plans.iter().flatten().map(FftPlan::n).max().unwrap_or(2);
            let twiddles: Vec<[f32; 2]> = (0..n_max / 2)
                .map(|m| {
                    let a = -2.0 * std::f64::consts::PI * m as f64 / n_max as f64;
                    [a.cos() as f32, a.sin() as f32]
                })
                .collect();
            let kernel_buf = buffer("fft kernel", (kernel_spectra.len() * 8) as u64, U::STORAGE | U::COPY_DST);
            let tw_buf = buffer("fft twiddles", (twiddles.len() * 8) as u64, U::STORAGE | U::COPY_DST);
            ctx.queue.write_buffer(&kernel_buf, 0, bytemuck::cast_slice(&kernel_spectra));
            ctx.queue.write_buffer(&tw_buf, 0, bytemuck::cast_slice(&twiddles));
            let spec_a = buffer("fft spectra a", (spec_len * 8) as u64, U::STORAGE);
            let spec_b = buffer("fft spectra b", (spec_len * 8) as u64, U::STORAGE);
            let fft_params = buffer("fft params", fft_slots as u64 * PARAM_SLOT, U::UNIFORM | U::COPY_DST);
            let fft_pipes = ctx.fft_pipelines();
            let fft_layout = &fft_pipes.layout;
            let group = |from: &wgpu::Buffer, to: &wgpu::Buffer| {
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("fft"),
                    layout: fft_layout,
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: &fft_params,
                                offset: 0,
                                size: std::num::NonZeroU64::new(64),
                            }),
                        },
                        wgpu::BindGroupEntry { binding: 1, resource: whole(&work) },
                        wgpu::BindGroupEntry { binding: 2, resource: whole(&history) },
                        wgpu::BindGroupEntry { binding: 3, resource: whole(&kernel_buf) },
                        wgpu::BindGroupEntry { binding: 4, resource: whole(&tw_buf) },
                        wgpu::BindGroupEntry { binding: 5, resource: whole(from) },
                        wgpu::BindGroupEntry { binding: 6, resource: whole(to) },
                        wgpu::BindGroupEntry { binding: 7, resource: whole(&tmp) },
                    ],
                })
            };
            Some(FftKit {
                segments: fft_pipes.segments.clone(),
                pass: fft_pipes.pass.clone(),
                mac: fft_pipes.mac.clone(),
                extract: fft_pipes.extract.clone(),
                kernel: kernel_buf.clone(),
                a_to_b: group(&spec_a, &spec_b),
                b_to_a: group(&spec_b, &spec_a),
                params: fft_params,
                n_max,
            })
        };
        Ok(WgpuChain {
            ctx: ctx.clone(),
            channels,
            max_frames,
            sos_pipeline,
            sos64_pipeline,
            fir_pipeline,
            hist_pipeline,
            stages,
            forms,
            realizations,
            sections: sections_buf,
            sections64,
            taps: taps_buf,
            params,
            work,
            tmp,
            tables,
            tables64,
            states,
            states64_at,
            states_bytes: state_bytes,
            history,
            hist_out,
            readback,
            slots: [None, None],
            table_chunk_len: 0,
            fir_len,
            state_f32: vec![[0.0; 2]; channels * total_sections],
            state_f64: if wide { vec![[0.0; 2]; channels * total_sections] } else { Vec::new() },
            table_scratch: vec![[0.0; 4]; total_sections * SCAN_STEPS],
            table_scratch64: if wide { vec![[0.0; 4]; total_sections * SCAN_STEPS] } else { Vec::new() },
            sequential_max,
            fft,
            state_required: false,
        })
    }

    pub fn channels(&self) -> usize {
        self.channels
    }

    pub fn max_frames(&self) -> usize {
        self.max_frames
    }

    pub fn report(&self) -> &AdapterReport {
        self.ctx.report()
    }

    /// A zeroed state of this chain's shape (the same layout as
    /// [`crate::engine::Engine::new_state`] for the same chain and channels).
    pub fn new_state(&self) -> ChainState {
        ChainState { sos: vec![[0.0; 2]; self.state_f32.len()], fir: vec![0.0; self.fir_len] }
    }

    /// Blocks up to `frames` take the sequential path (tests use this to force either path).
    pub fn set_sequential_max(&mut self, frames: usize) {
        self.sequential_max = frames;
    }

    /// Filters `data` (planar, `channels x frames`, `frames <= max_frames`) in place,
    /// starting from `state` and leaving the end state there. Blocks this thread until the
    /// device is done.
    pub fn process(&mut self, data: &mut [f32], frames: usize, state: &mut ChainState) -> Result<(), GpuError> {
        if frames == 0 {
            return Ok(());
        }
        self.submit(0, data, frames, Some(state), true)?;
        self.collect(0, data, Some(state))
    }

    /// Submits a block (planar `data`, `channels x frames`) into read-back slot `slot`
    /// (0 or 1) without waiting for it. With `state` the job starts from it; without, from the
    /// state the previous job left on the device, so consecutive blocks can be submitted
    /// before the earlier ones are read (jobs run in submission order). With `read_state`
    /// the end state is copied out too, for [`WgpuChain::collect`]. The slot must have been
    /// collected.
    pub fn submit(
        &mut self,
        slot: usize,
        data: &[f32],
        frames: usize,
        state: Option<&ChainState>,
        read_state: bool,
    ) -> Result<(), GpuError> {
        let (channels, total) = (self.channels, self.realizations.len());
        if slot > 1 || self.slots[slot].is_some() {
            return Err(GpuError::Job { why: format!("read-back slot {slot} is not free") });
        }
        if frames == 0 || frames > self.max_frames || data.len() < channels * frames {
            return Err(GpuError::Job {
                why: format!(
                    "{} samples for {channels} channels x {frames} frames (largest block {})",
                    data.len(),
                    self.max_frames
                ),
            });
        }
        if let Some(state) = state {
            if state.sos.len() != channels * total || state.fir.len() != self.fir_len {
                return Err(GpuError::Job {
                    why: format!(
                        "state of {} SOS and {} FIR samples, the chain needs {} and {}",
                        state.sos.len(),
                        state.fir.len(),
                        channels * total,
                        self.fir_len
                    ),
                });
            }
        }
        if self.ctx.is_lost() {
            return Err(GpuError::DeviceLost { why: "the device was lost earlier".into() });
        }
        if state.is_none() && self.state_required {
            return Err(GpuError::Job {
                why: "a cascade changed precision with the last coefficients: this job must carry the state (the device's is in the other precision)".into(),
            });
        }
        let queue = self.ctx.queue.clone();
        // Input and state in. The shader's state layout is the engine's ([stage][channel]
        // [section]), converted to each section's delta form.
        queue.write_buffer(&self.work, 0, bytemuck::cast_slice(&data[..channels * frames]));
        if let Some(state) = state {
            self.state_required = false;
            self.convert_states_in(state);
            if !self.state_f32.is_empty() {
                queue.write_buffer(&self.states, 0, bytemuck::cast_slice(&self.state_f32));
            }
            if !self.state_f64.is_empty() {
                queue.write_buffer(&self.states, self.states64_at, bytemuck::cast_slice(&self.state_f64));
            }
            if !state.fir.is_empty() {
                queue.write_buffer(&self.history, 0, bytemuck::cast_slice(&state.fir));
            }
        }
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("job") });
        let block_bytes = (channels * frames * 4) as u64;
        self.encode_stages(&mut encoder, frames, chunking(frames, self.sequential_max));
        let readback = &self.readback[slot];
        encoder.copy_buffer_to_buffer(&self.work, 0, readback, 0, block_bytes);
        if read_state {
            let state_bytes = self.states_bytes;
            let hist_bytes = (self.fir_len * 4) as u64;
            if state_bytes > 0 {
                encoder.copy_buffer_to_buffer(&self.states, 0, readback, block_bytes, state_bytes);
            }
            if hist_bytes > 0 {
                encoder.copy_buffer_to_buffer(&self.history, 0, readback, block_bytes + state_bytes, hist_bytes);
            }
        }
        {
            let _turn = self.ctx.gate.lock().unwrap_or_else(|e| e.into_inner());
            queue.submit([encoder.finish()]);
        }
        self.slots[slot] = Some(SlotJob { frames, with_state: read_state });
        Ok(())
    }

    /// Writes the stages' parameters for a block of `frames` frames (packed: channel
    /// stride `frames`, in `work`) cut into `(chunks, chunk_len)` for the scan, and
    /// encodes the stages' passes into `encoder`. The parameters are queue writes: they
    /// take effect before the next submission, so one submission holds blocks of one
    /// length and chunking only.
    pub(super) fn encode_stages(&mut self, encoder: &mut wgpu::CommandEncoder, frames: usize, (chunks, chunk_len): (usize, usize)) {
        let (channels, total) = (self.channels, self.realizations.len());
        let queue = self.ctx.queue.clone();
        if chunks > 1 && chunk_len != self.table_chunk_len && total > 0 {
            for (r, out) in self.realizations.iter().zip(self.table_scratch.chunks_exact_mut(SCAN_STEPS)) {
                out.copy_from_slice(&r.scan_table(chunk_len));
            }
            queue.write_buffer(&self.tables, 0, bytemuck::cast_slice(&self.table_scratch));
            if let Some(t64) = &self.tables64 {
                for (r, out) in self.realizations.iter().zip(self.table_scratch64.chunks_exact_mut(SCAN_STEPS)) {
                    out.copy_from_slice(&r.scan_table_as::<f64>(chunk_len));
                }
                queue.write_buffer(t64, 0, bytemuck::cast_slice(&self.table_scratch64));
            }
            self.table_chunk_len = chunk_len;
        }
        // Parameters of every stage for this block length. Queue writes take effect in
        // submission order, after the jobs already submitted.
        let mut state_base = 0usize;
        for (i, stage) in self.stages.iter().enumerate() {
            let words: [u32; 8] = match *stage {
                StagePlan::Sos { first, count, .. } => {
                    let w = [frames, chunk_len, chunks, frames, first, count, state_base, 0];
                    state_base += channels * count;
                    w.map(|v| v as u32)
                }
                StagePlan::Fir { tap_base, taps, hist_base, fft, .. } => {
                    if let (Some(plan), Some(kit)) = (fft, self.fft.as_ref()) {
                        write_fft_params(&queue, kit, &plan, taps, frames, hist_base);
                    }
                    [frames, taps, frames, tap_base, hist_base, 0, 0, 0].map(|v| v as u32)
                }
            };
            queue.write_buffer(&self.params, i as u64 * PARAM_SLOT, bytemuck::cast_slice(&words));
        }
        let block_bytes = (channels * frames * 4) as u64;
        for stage in &self.stages {
            match stage {
                StagePlan::Sos { count, bind, bind64, precision, .. } => {
                    if *count == 0 {
                        continue;
                    }
                    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sos"), timestamp_writes: None });
                    // A float64 stage exists only on a device with its pipeline and bindings.
                    match (precision, &self.sos64_pipeline, bind64) {
                        (GpuPrecision::F64, Some(wide), Some(b64)) => {
                            pass.set_pipeline(wide);
                            pass.set_bind_group(0, b64, &[]);
                        }
                        _ => {
                            pass.set_pipeline(&self.sos_pipeline);
                            pass.set_bind_group(0, bind, &[]);
                        }
                    }
                    pass.dispatch_workgroups(channels as u32, 1, 1);
                }
                StagePlan::Fir { taps, hist_base, bind, fft, .. } => {
                    let hist = taps - 1;
                    {
                        let mut pass =
                            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("fir"), timestamp_writes: None });
                        match (fft, self.fft.as_ref()) {
                            (Some(plan), Some(kit)) => encode_fft(&mut pass, kit, plan, channels, frames),
                            _ => {
                                pass.set_bind_group(0, bind, &[]);
                                pass.set_pipeline(&self.fir_pipeline);
                                pass.dispatch_workgroups(frames.div_ceil(256) as u32, channels as u32, 1);
                            }
                        }
                        pass.set_bind_group(0, bind, &[]);
                        if hist > 0 {
                            pass.set_pipeline(&self.hist_pipeline);
                            pass.dispatch_workgroups(hist.div_ceil(256) as u32, channels as u32, 1);
                        }
                    }
                    encoder.copy_buffer_to_buffer(&self.tmp, 0, &self.work, 0, block_bytes);
                    if hist > 0 {
                        let at = (hist_base * 4) as u64;
                        encoder.copy_buffer_to_buffer(&self.hist_out, at, &self.history, at, (channels * hist * 4) as u64);
                    }
                }
            }
        }
    }

    /// Waits for the job in read-back `slot` and reads its output into `data` (planar,
    /// `channels x frames` of that job) and, when it was submitted with `read_state`, its
    /// end state into `state`.
    pub fn collect(&mut self, slot: usize, data: &mut [f32], mut state: Option<&mut ChainState>) -> Result<(), GpuError> {
        let Some(job) = self.slots.get_mut(slot).and_then(|s| s.take()) else {
            return Err(GpuError::Job { why: format!("nothing was submitted into read-back slot {slot}") });
        };
        let channels = self.channels;
        let frames = job.frames;
        if data.len() < channels * frames {
            return Err(GpuError::Job { why: format!("{} samples for {channels} channels x {frames} frames", data.len()) });
        }
        let block_bytes = (channels * frames * 4) as u64;
        let (state_bytes, hist_bytes) =
            if job.with_state { (self.states_bytes, (self.fir_len * 4) as u64) } else { (0, 0) };
        let total_bytes = block_bytes + state_bytes + hist_bytes;
        let readback = self.readback[slot].clone();
        let slice = readback.slice(..total_bytes);
        let (tx, rx) = mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        // The map callback runs inside some thread's poll (another user of the device may
        // be the one that runs it), so wait for it rather than assume it ran in ours. A
        // poll that times out still runs the callbacks of the jobs already finished, so a
        // later job still running does not hold this one up.
        let deadline = std::time::Instant::now() + JOB_TIMEOUT;
        loop {
            if self.ctx.is_lost() {
                return Err(GpuError::DeviceLost { why: "the device was lost during the job".into() });
            }
            // Short waits, so other users of the device get their turn and a device lost
            // mid-job is noticed promptly.
            let polled = {
                let _turn = self.ctx.gate.lock().unwrap_or_else(|e| e.into_inner());
                self.ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: Some(Duration::from_millis(1)) })
            };
            match polled {
                Ok(_) | Err(wgpu::PollError::Timeout) => {}
                Err(e) => return Err(GpuError::DeviceLost { why: e.to_string() }),
            }
            match rx.recv_timeout(Duration::from_micros(100)) {
                Ok(Ok(())) => break,
                Ok(Err(e)) => return Err(GpuError::DeviceLost { why: e.to_string() }),
                Err(_) if std::time::Instant::now() < deadline => continue,
                Err(_) => return Err(GpuError::DeviceLost { why: "the read-back never completed".into() }),
            }
        }
        {
            let view = slice.get_mapped_range().map_err(|e| GpuError::DeviceLost { why: e.to_string() })?;
            let bytes: &[u8] = &view;
            let read_f32 = |at: usize, out: &mut [f32]| {
                for (o, b) in out.iter_mut().zip(bytes[at..].chunks_exact(4)) {
                    *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
            };
            read_f32(0, &mut data[..channels * frames]);
            if let (true, Some(state)) = (job.with_state, state.as_deref_mut()) {
                let st = block_bytes as usize;
                for (o, b) in self.state_f32.iter_mut().zip(bytes[st..].chunks_exact(8)) {
                    *o = [f32::from_le_bytes([b[0], b[1], b[2], b[3]]), f32::from_le_bytes([b[4], b[5], b[6], b[7]])];
                }
                let at64 = st + self.states64_at as usize;
                for (o, b) in self.state_f64.iter_mut().zip(bytes[at64.min(bytes.len())..].chunks_exact(16)) {
                    let word = |k: usize| f64::from_le_bytes([b[k], b[k + 1], b[k + 2], b[k + 3], b[k + 4], b[k + 5], b[k + 6], b[k + 7]]);
                    *o = [word(0), word(8)];
                }
                read_f32(st + state_bytes as usize, &mut state.fir);
            }
        }
        readback.unmap();
        if let (true, Some(state)) = (job.with_state, state) {
            self.convert_states_out(state);
        }
        Ok(())
    }

    /// Takes each cascade's precision from `forms` (the same shape as this chain's);
    /// returns whether one changed.
    pub(super) fn set_precisions(&mut self, forms: &[StageForm]) -> bool {
        let mut changed = false;
        for (plan, form) in self.stages.iter_mut().zip(forms) {
            if let (StagePlan::Sos { precision, .. }, StageForm::Sos { precision: new, .. }) = (plan, form) {
                changed |= *precision != *new;
                *precision = *new;
            }
        }
        changed
    }

    fn convert_states_in(&mut self, state: &ChainState) {
        let channels = self.channels;
        let mut at = 0;
        for stage in &self.stages {
            if let StagePlan::Sos { first, count, precision, .. } = *stage {
                for _ in 0..channels {
                    for r in &self.realizations[first..first + count] {
                        match precision {
                            GpuPrecision::F32 => self.state_f32[at] = r.state_to_gpu(state.sos[at]),
                            GpuPrecision::F64 => self.state_f64[at] = r.state_to_gpu_as(state.sos[at]),
                        }
                        at += 1;
                    }
                }
            }
        }
    }

    /// Back to TDF-II; a non-finite channel state is reset and tiny values flushed, as the
    /// CPU cascade does.
    fn convert_states_out(&self, state: &mut ChainState) {
        let channels = self.channels;
        let mut at = 0;
        for stage in &self.stages {
            if let StagePlan::Sos { first, count, precision, .. } = *stage {
                for _ in 0..channels {
                    let start = at;
                    for r in &self.realizations[first..first + count] {
                        state.sos[at] = match precision {
                            GpuPrecision::F32 => r.state_from_gpu(self.state_f32[at]),
                            GpuPrecision::F64 => r.state_from_gpu(self.state_f64[at]),
                        };
                        at += 1;
                    }
                    crate::dsp::sos::sanitize_state(&mut state.sos[start..at]);
                }
            }
        }
        for v in state.fir.iter_mut() {
            if !v.is_finite() {
                *v = 0.0;
            }
        }
    }
}
