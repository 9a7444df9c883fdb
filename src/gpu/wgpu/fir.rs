//! The FFT-partitioned FIR path: per-stage plans, the shared FFT pipelines and bind
//! groups, kernel spectra, and the passes one long FIR stage encodes.

use super::PARAM_SLOT;

/// An FFT-partitioned FIR stage: partitions of `part` taps, FFTs of `2 part` points.
#[derive(Clone, Copy)]
pub(super) struct FftPlan {
    pub(super) part: usize,
    pub(super) pcount: usize,
    pub(super) log2n: usize,
    pub(super) kernel_base: usize,
    /// First of this stage's `2 log2n + 3` slots in the FFT parameter buffer.
    pub(super) slot_base: usize,
}

impl FftPlan {
    /// The plan of a stage's FFT form, its parameters from slot `slot_base`.
    pub(super) fn new(form: crate::gpu::design::FftForm, slot_base: usize) -> FftPlan {
        FftPlan { part: form.part, pcount: form.pcount, log2n: form.log2n, kernel_base: form.kernel_base, slot_base }
    }
    pub(super) fn n(&self) -> usize {
        2 * self.part
    }
    pub(super) fn slots(&self) -> usize {
        2 * self.log2n + 3
    }
    /// `(output segments, input segments)` per channel for a block of `frames`.
    pub(super) fn segments(&self, frames: usize) -> (usize, usize) {
        let outs = frames.div_ceil(self.part);
        (outs, outs + self.pcount)
    }
}

/// The FFT path's pipelines, buffers and bind groups (only when a chain has a long FIR).
pub(super) struct FftKit {
    pub(super) segments: wgpu::ComputePipeline,
    pub(super) pass: wgpu::ComputePipeline,
    pub(super) mac: wgpu::ComputePipeline,
    pub(super) extract: wgpu::ComputePipeline,
    pub(super) params: wgpu::Buffer,
    /// The partitions' spectra (rewritten in place for new coefficients).
    pub(super) kernel: wgpu::Buffer,
    /// Bind groups reading A writing B, and reading B writing A.
    pub(super) a_to_b: wgpu::BindGroup,
    pub(super) b_to_a: wgpu::BindGroup,
    pub(super) n_max: usize,
}

impl FftKit {
    /// The FFT path of a chain whose long FIRs have `plans` (`slots` parameter slots in
    /// all), their partition spectra `spectra`, spectrum buffers of `spec_len` bins, over
    /// the chain's `[work, history, tmp]` buffers.
    pub(super) fn new(ctx: &super::WgpuContext, plans: &[Option<FftPlan>], slots: usize, spectra: &[[f32; 2]], spec_len: usize, [work, history, tmp]: [&wgpu::Buffer; 3]) -> FftKit {
        use wgpu::BufferUsages as U;
        let device = &ctx.device;
        let buffer = |label: &str, size: u64, usage: wgpu::BufferUsages| {
            device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: size.max(16), usage, mapped_at_creation: false })
        };
        let n_max = plans.iter().flatten().map(FftPlan::n).max().unwrap_or(2);
        let twiddles: Vec<[f32; 2]> = (0..n_max / 2)
            .map(|m| {
                let a = -2.0 * std::f64::consts::PI * m as f64 / n_max as f64;
                [a.cos() as f32, a.sin() as f32]
            })
            .collect();
        let kernel_buf = buffer("fft kernel", (spectra.len() * 8) as u64, U::STORAGE | U::COPY_DST);
        let tw_buf = buffer("fft twiddles", (twiddles.len() * 8) as u64, U::STORAGE | U::COPY_DST);
        ctx.queue.write_buffer(&kernel_buf, 0, bytemuck::cast_slice(spectra));
        ctx.queue.write_buffer(&tw_buf, 0, bytemuck::cast_slice(&twiddles));
        let spec_a = buffer("fft spectra a", (spec_len * 8) as u64, U::STORAGE);
        let spec_b = buffer("fft spectra b", (spec_len * 8) as u64, U::STORAGE);
        let fft_params = buffer("fft params", slots as u64 * PARAM_SLOT, U::UNIFORM | U::COPY_DST);
        let fft_pipes = ctx.fft_pipelines();
        let group = |from: &wgpu::Buffer, to: &wgpu::Buffer| {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("fft"),
                layout: &fft_pipes.layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: &fft_params, offset: 0, size: std::num::NonZeroU64::new(64) }),
                    },
                    wgpu::BindGroupEntry { binding: 1, resource: work.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 2, resource: history.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 3, resource: kernel_buf.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 4, resource: tw_buf.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 5, resource: from.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 6, resource: to.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 7, resource: tmp.as_entire_binding() },
                ],
            })
        };
        FftKit {
            segments: fft_pipes.segments.clone(),
            pass: fft_pipes.pass.clone(),
            mac: fft_pipes.mac.clone(),
            extract: fft_pipes.extract.clone(),
            kernel: kernel_buf.clone(),
            a_to_b: group(&spec_a, &spec_b),
            b_to_a: group(&spec_b, &spec_a),
            params: fft_params,
            n_max,
        }
    }
}

/// Writes the FFT path's per-dispatch parameters for a block of `frames`.
pub(super) fn write_fft_params(queue: &wgpu::Queue, kit: &FftKit, plan: &FftPlan, taps: usize, frames: usize, hist_base: usize) {
    let n = plan.n();
    let (outs, segs) = plan.segments(frames);
    let base = |half_span: usize, r: usize| -> [u32; 16] {
        [n, half_span, r, kit.n_max / n, plan.part, plan.pcount, segs, outs, taps, frames, frames, hist_base, plan.kernel_base, 0, 0, 0]
            .map(|v| v as u32)
    };
    let mut slot = plan.slot_base;
    let mut put = |words: [u32; 16]| {
        queue.write_buffer(&kit.params, slot as u64 * PARAM_SLOT, bytemuck::cast_slice(&words));
        slot += 1;
    };
    // Slots: segments, the forward stages, mac, the inverse stages, extract.
    for _ in 0..2 {
        put(base(0, 0)); // segments, then mac
        for q in 1..=plan.log2n {
            put(base(1 << (q - 1), n >> q));
        }
    }
    put(base(0, 0)); // extract
}

/// Encodes one FFT-partitioned FIR stage: its output lands in `tmp`.
pub(super) fn encode_fft(pass: &mut wgpu::ComputePass<'_>, kit: &FftKit, plan: &FftPlan, channels: usize, frames: usize) {
    let n = plan.n();
    let (outs, segs) = plan.segments(frames);
    let offset = |k: usize| ((plan.slot_base + k) as u64 * PARAM_SLOT) as u32;
    // `cur`: which spectrum buffer holds the data (false: A, true: B).
    let mut cur = false;
    let group = |from_b: bool| if from_b { &kit.b_to_a } else { &kit.a_to_b };
    // segments: B -> A (writes A)
    pass.set_pipeline(&kit.segments);
    pass.set_bind_group(0, &kit.b_to_a, &[offset(0)]);
    pass.dispatch_workgroups((n / 256) as u32, segs as u32, channels as u32);
    let mut k = 1;
    // The log2(n) butterfly stages over `rows` transforms per channel, ping-ponging
    // between the spectrum buffers (forward and inverse differ only in their slots).
    let butterflies = |pass: &mut wgpu::ComputePass<'_>, rows: usize, cur: &mut bool, k: &mut usize| {
        pass.set_pipeline(&kit.pass);
        for _ in 0..plan.log2n {
            pass.set_bind_group(0, group(*cur), &[offset(*k)]);
            pass.dispatch_workgroups((n / 2).div_ceil(256) as u32, (channels * rows) as u32, 1);
            *cur = !*cur;
            *k += 1;
        }
    };
    butterflies(pass, segs, &mut cur, &mut k);
    pass.set_pipeline(&kit.mac);
    pass.set_bind_group(0, group(cur), &[offset(k)]);
    pass.dispatch_workgroups((n / 256) as u32, outs as u32, channels as u32);
    cur = !cur;
    k += 1;
    butterflies(pass, outs, &mut cur, &mut k);
    pass.set_pipeline(&kit.extract);
    pass.set_bind_group(0, group(cur), &[offset(k)]);
    pass.dispatch_workgroups(plan.part.div_ceil(256) as u32, outs as u32, channels as u32);
}
