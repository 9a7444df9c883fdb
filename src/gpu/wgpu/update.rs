//! New coefficients for a chain of the same shape: the design is written into the
//! buffers the bind groups already point at (the sections, the FIR taps, the FFT
//! partitions' spectra), so nothing is rebuilt.

use super::WgpuChain;
use crate::chain::DesignedChain;
use crate::gpu::design::GpuDesign;
use crate::gpu::GpuError;

impl WgpuChain {
    /// Takes the coefficients of `chain`, which must have this chain's shape (the same
    /// stages in the same order, the same section and tap counts). Jobs already
    /// submitted finish with the old coefficients (queue writes take effect at the next
    /// submission); later jobs use the new ones, their state (the CPU engine's) converted
    /// with them. On error (another shape, a cascade whose float32 form would miss the
    /// tolerance in float32 and, where the device has it, float64; a cascade that moves between the two is another shape) the chain keeps its old coefficients. Allocates the design on the
    /// host: not for an audio thread.
    pub fn set_coefficients(&mut self, chain: &DesignedChain) -> Result<(), GpuError> {
        let design = GpuDesign::new(chain, self.channels, self.max_frames, self.sequential_max, "wgpu", self.ctx.has_float64())?;
        design.fits(&self.forms, self.fir_len)?;
        let queue = &self.ctx.queue;
        queue.write_buffer(&self.sections, 0, bytemuck::cast_slice(&design.section_records()));
        if design.has_float64() && self.float64.is_none() {
            // Cannot happen: only a device with float64 designs float64 stages, and there
            // every chain has the float64 buffers.
            return Err(GpuError::Unsupported { what: "a float64 cascade on a chain built without float64 buffers".into() });
        }
        if let Some(f64s) = &self.float64 {
            queue.write_buffer(&f64s.sections, 0, bytemuck::cast_slice(&design.section_records64()));
        }
        queue.write_buffer(&self.taps, 0, bytemuck::cast_slice(&design.taps));
        if let Some(kit) = &self.fft {
            queue.write_buffer(&kit.kernel, 0, bytemuck::cast_slice(&design.spectra));
        }
        // The scan tables follow the coefficients: rewritten before the next scanned job.
        self.table_chunk_len = 0;
        // A cascade may move between float32 and float64 (the same shape, both kept on a
        // device with float64): its state lives in the other precision's slots then, so
        // the next job must bring its state (the offload's jobs always do).
        if self.set_precisions(&design.stages) {
            self.state_required = true;
        }
        self.forms = design.stages;
        self.realizations = design.realizations;
        // The pipeline's plan follows (a cascade may leave or join a run).
        self.refresh_pipe();
        // The fused groups' tables and choice follow (a cascade may leave or join them).
        self.refresh_fused()
    }
}
