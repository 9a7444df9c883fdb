//! Building a [`WgpuChain`]: the design checked for this device (precision, buffer sizes,
//! lavapipe's loop limit), its buffers, and each stage's bind groups.

use super::super::fir::{FftKit, FftPlan};
use super::super::{sequential_max_for, WgpuContext, PARAM_SLOT};
use super::{Float64Stages, StagePlan, WgpuChain};
use crate::chain::DesignedChain;
use crate::gpu::design::{GpuDesign, StageForm};
use crate::gpu::realize::{chunking, SCAN_STEPS};
use crate::gpu::GpuError;
use wgpu::BufferUsages as U;

/// The most iterations lavapipe runs of one loop of a shader invocation: llvmpipe's
/// gallivm stops a loop after 65,535 (`LP_MAX_TGSI_LOOP_ITERATIONS`), counted over every
/// entry of the loop in the invocation, and the samples after it are silently wrong. The
/// SOS shaders' sample loops run `sections x samples per invocation` times (measured here:
/// 4 sections x 16,384 samples sequential came out wrong from sample 16,368 on; 12 x 4,096
/// right, 12 x 8,192 wrong).
pub(in crate::gpu::wgpu) const SOFTWARE_LOOP_LIMIT: usize = 65_535;

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

/// A storage buffer of `size` bytes (at least 16).
fn buffer(device: &wgpu::Device, label: &str, size: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: size.max(16), usage, mapped_at_creation: false })
}

fn whole(b: &wgpu::Buffer) -> wgpu::BindingResource<'_> {
    b.as_entire_binding()
}

/// Stage `i`'s 32-byte slot of the parameter buffer.
fn param_slot(params: &wgpu::Buffer, i: usize) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: params, offset: i as u64 * PARAM_SLOT, size: std::num::NonZeroU64::new(32) })
}

/// The buffers every stage's bind groups point at.
struct Buffers {
    params: wgpu::Buffer,
    work: wgpu::Buffer,
    tmp: wgpu::Buffer,
    sections: wgpu::Buffer,
    tables: wgpu::Buffer,
    states: wgpu::Buffer,
    taps: wgpu::Buffer,
    history: wgpu::Buffer,
    hist_out: wgpu::Buffer,
    /// The float64 samples of a float64 cascade (on a device with float64).
    wide: Option<wgpu::Buffer>,
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
        // On a device with float64 every chain gets the float64 buffers and bindings, so
        // new coefficients can move a cascade between precisions in place.
        let wide = ctx.has_float64();
        let records = design.section_records();
        let records64 = if wide { design.section_records64() } else { Vec::new() };
        let GpuDesign { stages: forms, realizations, taps: taps_all, spectra: kernel_spectra, fir_len, spec_len } = design;
        let total_sections = realizations.len();
        let work_bytes = (channels * max_frames * 4) as u64;
        // The float64 states from the next offset a storage binding may start at.
        let align = u64::from(ctx.limits.min_storage_buffer_offset_alignment).max(16);
        let states_at = ((channels * total_sections * 8) as u64).div_ceil(align) * align;
        let states_bytes = if wide { states_at + (channels * total_sections * 16) as u64 } else { (channels * total_sections * 8) as u64 };
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
        let b = Buffers {
            params: buffer(device, "params", forms.len().max(1) as u64 * PARAM_SLOT, U::UNIFORM | U::COPY_DST),
            work: buffer(device, "work", work_bytes, U::STORAGE | U::COPY_DST | U::COPY_SRC),
            tmp: buffer(device, "tmp", work_bytes, U::STORAGE | U::COPY_SRC),
            sections: buffer(device, "sections", (total_sections * 48) as u64, U::STORAGE | U::COPY_DST),
            tables: buffer(device, "tables", (total_sections * SCAN_STEPS * 16) as u64, U::STORAGE | U::COPY_DST),
            states: buffer(device, "states", states_bytes, U::STORAGE | U::COPY_DST | U::COPY_SRC),
            taps: buffer(device, "taps", (taps_all.len() * 4) as u64, U::STORAGE | U::COPY_DST),
            history: buffer(device, "history", hist_bytes, U::STORAGE | U::COPY_DST | U::COPY_SRC),
            hist_out: buffer(device, "hist_out", hist_bytes, U::STORAGE | U::COPY_SRC),
            wide: wide.then(|| buffer(device, "wide", 2 * work_bytes, U::STORAGE)),
        };
        let readback = [0, 1].map(|_| buffer(device, "readback", work_bytes + states_bytes + hist_bytes, U::MAP_READ | U::COPY_DST));
        ctx.queue.write_buffer(&b.sections, 0, bytemuck::cast_slice(&records));
        ctx.queue.write_buffer(&b.taps, 0, bytemuck::cast_slice(&taps_all));
        let float64 = wide.then(|| {
            let sections = buffer(device, "sections64", (total_sections * 96) as u64, U::STORAGE | U::COPY_DST);
            ctx.queue.write_buffer(&sections, 0, bytemuck::cast_slice(&records64));
            Float64Stages {
                pipeline: ctx.pipelines().sos64(device).pipeline.clone(),
                sections,
                tables: buffer(device, "tables64", (total_sections * SCAN_STEPS * 32) as u64, U::STORAGE | U::COPY_DST),
                states_at,
                state: vec![[0.0; 2]; channels * total_sections],
                table_scratch: vec![[0.0; 4]; total_sections * SCAN_STEPS],
            }
        });
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
        let f64_states_bytes = (channels * total_sections * 16) as u64;
        let stages = forms
            .iter()
            .enumerate()
            .map(|(i, form)| match *form {
                StageForm::Sos { first, count, precision } => {
                    let (bind, bind64) = sos_binds(ctx, &b, float64.as_ref().map(|f| (f, f64_states_bytes)), i);
                    StagePlan::Sos { first, count, bind, bind64, precision }
                }
                StageForm::Fir { tap_base, taps, hist_base, .. } => {
                    StagePlan::Fir { tap_base, taps, hist_base, bind: fir_bind(ctx, &b, i), fft: fft_plans[i] }
                }
            })
            .collect::<Vec<_>>();
        let fft = (fft_slots > 0).then(|| FftKit::new(ctx, &fft_plans, fft_slots, &kernel_spectra, spec_len, [&b.work, &b.history, &b.tmp]));
        let pipes = ctx.pipelines();
        let mut chain = WgpuChain {
            ctx: ctx.clone(),
            channels,
            max_frames,
            sos_pipeline: pipes.sos.clone(),
            fir_pipeline: pipes.fir.clone(),
            hist_pipeline: pipes.hist.clone(),
            stages,
            forms,
            realizations,
            sections: b.sections,
            taps: b.taps,
            params: b.params,
            work: b.work,
            tmp: b.tmp,
            tables: b.tables,
            states: b.states,
            states_bytes,
            history: b.history,
            hist_out: b.hist_out,
            readback,
            slots: [None, None],
            table_chunk_len: 0,
            fir_len,
            state_f32: vec![[0.0; 2]; channels * total_sections],
            table_scratch: vec![[0.0; 4]; total_sections * SCAN_STEPS],
            float64,
            sequential_max,
            fft,
            state_required: false,
            fused: None,
            fused_group_max: 0,
            pipe: None,
            pipe_max_frames: 0,
        };
        if ctx.fused_sections() > 0 {
            chain.set_fused(ctx.fused_sections())?;
        }
        if ctx.pipeline_frames() > 0 {
            chain.set_pipeline(ctx.pipeline_frames())?;
        }
        Ok(chain)
    }
}

/// An SOS stage's bind groups: the float32 shader's, and on a device with float64 the
/// float64 shader's (`float64`: its half of the chain and the float64 states' bytes).
fn sos_binds(ctx: &WgpuContext, b: &Buffers, float64: Option<(&Float64Stages, u64)>, i: usize) -> (wgpu::BindGroup, Option<wgpu::BindGroup>) {
    let device = &ctx.device;
    let pipes = ctx.pipelines();
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("sos stage"),
        layout: &pipes.sos_layout,
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: param_slot(&b.params, i) },
            wgpu::BindGroupEntry { binding: 1, resource: whole(&b.work) },
            wgpu::BindGroupEntry { binding: 2, resource: whole(&b.sections) },
            wgpu::BindGroupEntry { binding: 3, resource: whole(&b.tables) },
            wgpu::BindGroupEntry { binding: 4, resource: whole(&b.states) },
        ],
    });
    let bind64 = match (float64, &b.wide) {
        (Some((f64s, states_bytes)), Some(wide)) => {
            let states64 = wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &b.states,
                offset: f64s.states_at,
                size: std::num::NonZeroU64::new(states_bytes.max(16)),
            });
            Some(device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("sos64 stage"),
                layout: &pipes.sos64(device).layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: param_slot(&b.params, i) },
                    wgpu::BindGroupEntry { binding: 1, resource: whole(&b.work) },
                    wgpu::BindGroupEntry { binding: 2, resource: whole(&f64s.sections) },
                    wgpu::BindGroupEntry { binding: 3, resource: whole(&f64s.tables) },
                    wgpu::BindGroupEntry { binding: 4, resource: states64 },
                    wgpu::BindGroupEntry { binding: 5, resource: whole(wide) },
                ],
            }))
        }
        _ => None,
    };
    (bind, bind64)
}

/// A direct-FIR stage's bind group (also the history pass's).
fn fir_bind(ctx: &WgpuContext, b: &Buffers, i: usize) -> wgpu::BindGroup {
    ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("fir stage"),
        layout: &ctx.pipelines().fir_layout,
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: param_slot(&b.params, i) },
            wgpu::BindGroupEntry { binding: 1, resource: whole(&b.work) },
            wgpu::BindGroupEntry { binding: 2, resource: whole(&b.taps) },
            wgpu::BindGroupEntry { binding: 3, resource: whole(&b.history) },
            wgpu::BindGroupEntry { binding: 4, resource: whole(&b.tmp) },
            wgpu::BindGroupEntry { binding: 5, resource: whole(&b.hist_out) },
        ],
    })
}
