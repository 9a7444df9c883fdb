//! One job on a [`WgpuChain`]: its input and state written, the stages' passes encoded,
//! submitted into a read-back slot, and collected (output and end state read back).

use super::super::fir::{encode_fft, write_fft_params};
use super::super::JOB_TIMEOUT;
use super::{SlotJob, StagePlan, WgpuChain, PARAM_SLOT};
use crate::engine::ChainState;
use crate::gpu::realize::{chunking, GpuPrecision, SCAN_STEPS};
use crate::gpu::GpuError;
use std::sync::mpsc;
use std::time::Duration;

impl WgpuChain {
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
            crate::gpu::design::check_state(state, channels * total, self.fir_len)?;
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
            self.write_states();
            if !state.fir.is_empty() {
                queue.write_buffer(&self.history, 0, bytemuck::cast_slice(&state.fir));
            }
        }
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("job") });
        let block_bytes = (channels * frames * 4) as u64;
        self.encode_stages(&mut encoder, frames, chunking(frames, self.sequential_limit()));
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
    pub(in crate::gpu::wgpu) fn encode_stages(&mut self, encoder: &mut wgpu::CommandEncoder, frames: usize, (chunks, chunk_len): (usize, usize)) {
        let (channels, total) = (self.channels, self.realizations.len());
        let queue = self.ctx.queue.clone();
        if chunks > 1 && chunk_len != self.table_chunk_len && total > 0 {
            for (r, out) in self.realizations.iter().zip(self.table_scratch.chunks_exact_mut(SCAN_STEPS)) {
                out.copy_from_slice(&r.scan_table(chunk_len));
            }
            queue.write_buffer(&self.tables, 0, bytemuck::cast_slice(&self.table_scratch));
            if let Some(f64s) = self.float64.as_mut() {
                for (r, out) in self.realizations.iter().zip(f64s.table_scratch.chunks_exact_mut(SCAN_STEPS)) {
                    out.copy_from_slice(&r.scan_table_as::<f64>(chunk_len));
                }
                queue.write_buffer(&f64s.tables, 0, bytemuck::cast_slice(&f64s.table_scratch));
            }
            self.table_chunk_len = chunk_len;
        }
        // Parameters of every stage for this block length. Queue writes take effect in
        // submission order, after the jobs already submitted.
        let fused_block = super::super::fused::fused_block((chunks, chunk_len));
        let mut state_base = 0usize;
        for (i, stage) in self.stages.iter().enumerate() {
            let words: [u32; 8] = match *stage {
                StagePlan::Sos { first, count, .. } => {
                    if let Some(f) = self.fused.as_ref().filter(|f| fused_block && f.runs(i)) {
                        f.write_params(&queue, i, (first, count, state_base), frames, channels);
                    }
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
        if let Some(pipe) = self.pipe.as_ref().filter(|_| chunks == 1) {
            pipe.write_params(&queue, frames);
        }
        let block_bytes = (channels * frames * 4) as u64;
        // Stages before this one ran in a pipeline dispatch (sequential blocks only).
        let mut piped_until = 0usize;
        for (i, stage) in self.stages.iter().enumerate() {
            match stage {
                StagePlan::Sos { .. } if i < piped_until => {}
                StagePlan::Sos { count, bind, bind64, precision, .. } => {
                    if *count == 0 {
                        continue;
                    }
                    if let Some((pipe, group)) = self.pipe.as_ref().and_then(|p| p.group_at(i, chunks, frames).map(|g| (p, g))) {
                        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sos pipe"), timestamp_writes: None });
                        pipe.encode(&mut pass, &self.ctx.pipelines().pipe(&self.ctx.device).pipeline, group, channels);
                        piped_until = group.stages.end;
                        continue;
                    }
                    if let Some(f) = self.fused.as_ref().filter(|f| fused_block && f.runs(i)) {
                        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sos fused"), timestamp_writes: None });
                        f.encode(&mut pass, self.ctx.pipelines().fused(&self.ctx.device), i, frames, channels);
                        continue;
                    }
                    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sos"), timestamp_writes: None });
                    // A float64 stage exists only on a device with its pipeline and bindings.
                    match (precision, &self.float64, bind64) {
                        (GpuPrecision::F64, Some(f64s), Some(b64)) => {
                            pass.set_pipeline(&f64s.pipeline);
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
                self.read_states(&bytes[st..st + state_bytes as usize]);
                read_f32(st + state_bytes as usize, &mut state.fir);
            }
        }
        readback.unmap();
        if let (true, Some(state)) = (job.with_state, state) {
            self.convert_states_out(state);
        }
        Ok(())
    }

}
