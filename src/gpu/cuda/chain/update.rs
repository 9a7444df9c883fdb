//! New coefficients for a chain of the same shape: the design is written into the device
//! buffers the captured graphs read (the sections, the FIR taps, the FFT partitions'
//! spectra), so a coefficient change costs a few uploads and no capture.

use super::{design_for, CudaChain};
use crate::chain::DesignedChain;
use crate::gpu::cuda::CudaError;
use crate::gpu::GpuError;

impl CudaChain {
    /// Takes the coefficients of `chain`, which must have this chain's shape (the same
    /// stages in the same order, the same section and tap counts). Jobs already enqueued
    /// finish with the old coefficients (the uploads are ordered after them on the
    /// chain's stream); later jobs, graph replays included, use the new ones. A job's
    /// state is the CPU engine's, converted with the new coefficients when it is staged,
    /// so a stream carries on through the change as the CPU's does.
    ///
    /// A cascade may move between float32 and float64 (both precisions' records and
    /// tables are kept): its launches change then, so the captured graphs are dropped
    /// (the next jobs capture again), and the float64 sample buffer is allocated the
    /// first time a cascade needs it. Such a change is refused while blocks of the
    /// overlapped stream are in flight (their state is on the device, in the other
    /// precision's slots).
    ///
    /// On error (another shape, a cascade whose float32 and float64 forms would both miss
    /// the tolerance, a FIR the backend does not run) the chain keeps its old
    /// coefficients. Allocates the design on the host: not for an audio thread.
    pub fn set_coefficients(&mut self, chain: &DesignedChain) -> Result<(), CudaError> {
        let design = design_for(chain, self.channels, self.max_frames, self.sequential_max)?;
        design.fits(&self.plans, self.fir_len)?;
        let precision_changed = self.plans.iter().zip(&design.stages).any(|(a, b)| a != b);
        if precision_changed {
            let n = self.flight.in_flight();
            if n > 0 {
                return Err(CudaError::Gpu(GpuError::Job {
                    why: format!("{n} blocks of a stream in flight: a cascade changes precision with these coefficients; collect them first"),
                }));
            }
            let block = self.channels * self.max_frames;
            if design.has_float64() && self.wide.len() < block {
                self.wide = self.stream.alloc_zeros::<f64>(block)?;
            }
        }
        let records: Vec<f32> = design.section_records().concat();
        let records64: Vec<f64> = design.section_records64().concat();
        let spectra: Vec<f32> = design.spectra.concat();
        if !records.is_empty() {
            self.stream.memcpy_htod(&records, &mut self.sections)?;
            self.stream.memcpy_htod(&records64, &mut self.sections64)?;
        }
        if !design.taps.is_empty() {
            self.stream.memcpy_htod(&design.taps, &mut self.taps)?;
        }
        if !spectra.is_empty() {
            self.stream.memcpy_htod(&spectra, &mut self.kernel)?;
        }
        // The scan tables follow the coefficients: rewritten before the next scanned job.
        self.table_chunk_len = 0;
        if precision_changed {
            self.graphs = self.graphs.take().map(|_| Vec::new());
        }
        self.plans = design.stages;
        self.realizations = design.realizations;
        // The fused groups' tables follow too (and a cascade may leave or join them).
        self.refresh_fused()?;
        // And the pipeline's lane table (a cascade may leave or join a run).
        self.refresh_pipe()?;
        self.coefficient_updates += 1;
        Ok(())
    }

    /// Whether [`CudaChain::new`] on `dev` would take `chain` (the precision and
    /// launch-size rules), without touching the device.
    pub fn accepts(dev: &crate::gpu::cuda::CudaDevice, chain: &DesignedChain, channels: usize, max_frames: usize) -> Result<(), CudaError> {
        design_for(chain, channels.max(1), max_frames.max(1), dev.tuning.sequential_max_frames).map(|_| ())
    }

    /// Graphs captured so far and coefficient updates taken (a coefficient change that
    /// keeps every cascade's precision captures nothing: tests hold the first count still
    /// across the second).
    pub fn graph_counts(&self) -> (usize, usize) {
        (self.captures, self.coefficient_updates)
    }
}
