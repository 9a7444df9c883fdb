//! A designed chain in the forms every GPU backend uploads: each cascade's sections in
//! their delta form ([`crate::gpu::realize`]), the FIR taps and the FFT partitions'
//! spectra in float32, and where each stage's part lies in those buffers. A backend
//! builds its device buffers from a [`GpuDesign`] once; a later design of the same shape
//! ([`GpuDesign::fits`]) fits the same buffers, so new coefficients are written in
//! place. Pure host arithmetic, no device API.

use crate::chain::{DesignedChain, DesignedStage};
use crate::gpu::realize::{fft_partition_for, partition_spectra, realize_cascade, GpuPrecision, Realization};
use crate::gpu::GpuError;

/// FIRs up to this many taps run by direct convolution on every GPU backend, longer ones
/// by uniformly partitioned FFT convolution.
pub const DIRECT_MAX_TAPS: usize = 512;
/// The longest FIR the GPU backends run: the chain format's limit.
pub const MAX_FIR_TAPS: usize = crate::dsp::fir::MAX_TAPS;

/// An FFT-partitioned FIR stage: partitions of `part` taps, FFTs of `2 part` points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FftForm {
    pub part: usize,
    pub pcount: usize,
    pub log2n: usize,
    /// The stage's first bin in [`GpuDesign::spectra`].
    pub kernel_base: usize,
}

impl FftForm {
    /// Points per FFT.
    pub fn n(&self) -> usize {
        2 * self.part
    }
}

/// One stage's place in the uploaded buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageForm {
    /// Sections `first..first + count` of [`GpuDesign::realizations`], run in `precision`.
    Sos { first: usize, count: usize, precision: GpuPrecision },
    /// Taps `tap_base..tap_base + taps` of [`GpuDesign::taps`] (an empty FIR: one zero
    /// tap), its history at `hist_base` (`channels x (taps - 1)` samples).
    Fir { tap_base: usize, taps: usize, hist_base: usize, fft: Option<FftForm> },
}

/// A chain's host-side form for a GPU backend.
pub struct GpuDesign {
    pub stages: Vec<StageForm>,
    pub realizations: Vec<Realization>,
    pub taps: Vec<f32>,
    /// The FFT stages' partition spectra, one after another (complex, `[re, im]`).
    pub spectra: Vec<[f32; 2]>,
    /// FIR history samples, all stages and channels.
    pub fir_len: usize,
    /// Complex bins one FFT work buffer needs for the largest block.
    pub spec_len: usize,
}

impl GpuDesign {
    /// The design of `chain` for `channels` channels and blocks of up to `max_frames`
    /// frames on the backend named `backend`, or why it does not run there: a cascade
    /// whose float32 form would miss the tolerance (estimated for `sequential_max`, the
    /// backend's channel-parallel limit) and whose float64 form would too or cannot run
    /// (`float64`: the backend and device run cascades in double precision), a FIR over
    /// [`MAX_FIR_TAPS`].
    pub fn new(
        chain: &DesignedChain,
        channels: usize,
        max_frames: usize,
        sequential_max: usize,
        backend: &str,
        float64: bool,
    ) -> Result<GpuDesign, GpuError> {
        let mut d = GpuDesign { stages: Vec::new(), realizations: Vec::new(), taps: Vec::new(), spectra: Vec::new(), fir_len: 0, spec_len: 0 };
        for (index, stage) in chain.stages.iter().enumerate() {
            match stage {
                DesignedStage::Sos(sections) => {
                    // Exact or declined: float64 where float32 would miss, or the CPU.
                    let (delta, precision) = realize_cascade(sections, index, max_frames, sequential_max, float64)?;
                    d.stages.push(StageForm::Sos { first: d.realizations.len(), count: sections.len(), precision });
                    d.realizations.extend(delta);
                }
                DesignedStage::Fir(taps) => {
                    if taps.len() > MAX_FIR_TAPS {
                        return Err(GpuError::Unsupported {
                            what: format!("stage {index}: a FIR of {} taps (the {backend} backend runs FIRs up to {MAX_FIR_TAPS} taps)", taps.len()),
                        });
                    }
                    let n = taps.len().max(1);
                    let fft = (n > DIRECT_MAX_TAPS).then(|| {
                        let part = fft_partition_for(n);
                        let form = FftForm { part, pcount: n.div_ceil(part), log2n: (2 * part).trailing_zeros() as usize, kernel_base: d.spectra.len() };
                        d.spectra.extend(partition_spectra(taps, part));
                        d.spec_len = d.spec_len.max(channels * (max_frames.div_ceil(part) + form.pcount) * form.n());
                        form
                    });
                    d.stages.push(StageForm::Fir { tap_base: d.taps.len(), taps: n, hist_base: d.fir_len, fft });
                    d.taps.extend(taps.iter().map(|&t| t as f32));
                    if taps.is_empty() {
                        d.taps.push(0.0);
                    }
                    d.fir_len += channels * (n - 1);
                }
            }
        }
        Ok(d)
    }

    /// The sections' float32 records (`fx_section` of kernels/sos_math.h, `Section` of
    /// the WGSL shaders).
    pub fn section_records(&self) -> Vec<[f32; 12]> {
        self.realizations.iter().map(|r| r.to_gpu().words()).collect()
    }

    /// The sections' float64 records (the float64 shader's `Section`), every section's
    /// (the float32 stages' too, so both buffers are indexed alike).
    pub fn section_records64(&self) -> Vec<[f64; 12]> {
        self.realizations.iter().map(|r| r.to_gpu_as::<f64>().words()).collect()
    }

    /// Whether a stage runs in float64.
    pub fn has_float64(&self) -> bool {
        self.stages.iter().any(|s| matches!(s, StageForm::Sos { precision: GpuPrecision::F64, .. }))
    }

    /// Whether this design fits buffers built for a design of `stages` with `fir_len`
    /// history samples (same stages, section and tap counts, FFT partitions); if not, the
    /// error says both shapes.
    /// A cascade's precision is not part of the shape: a backend that runs float64 keeps
    /// the buffers of both and switches in place.
    pub fn fits(&self, stages: &[StageForm], fir_len: usize) -> Result<(), GpuError> {
        let erased = |s: &StageForm| match *s {
            StageForm::Sos { first, count, .. } => StageForm::Sos { first, count, precision: GpuPrecision::F32 },
            other => other,
        };
        if self.stages.len() == stages.len() && self.stages.iter().zip(stages).all(|(a, b)| erased(a) == erased(b)) && self.fir_len == fir_len {
            return Ok(());
        }
        Err(GpuError::Job {
            why: format!(
                "new coefficients for stages {} on a chain of stages {} (only the coefficients of the same shape can change in place; build a new chain)",
                shape(&self.stages),
                shape(stages)
            ),
        })
    }
}

/// Whether a job's `state` has the shape of a chain with `sos` SOS states (channels x
/// sections) and `fir` FIR history samples; if not, the error says both.
pub fn check_state(state: &crate::engine::ChainState, sos: usize, fir: usize) -> Result<(), GpuError> {
    if state.sos.len() == sos && state.fir.len() == fir {
        return Ok(());
    }
    Err(GpuError::Job {
        why: format!("state of {} SOS and {} FIR samples, the chain needs {sos} and {fir}", state.sos.len(), state.fir.len()),
    })
}

/// Stages in words, e.g. `sos(4) fir(101)`.
pub fn shape(stages: &[StageForm]) -> String {
    let words: Vec<String> = stages
        .iter()
        .map(|s| match s {
            StageForm::Sos { count, precision: GpuPrecision::F32, .. } => format!("sos({count})"),
            StageForm::Sos { count, precision: GpuPrecision::F64, .. } => format!("sos64({count})"),
            StageForm::Fir { taps, .. } => format!("fir({taps})"),
        })
        .collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::{Biquad, Butterworth, Fir};

    #[test]
    fn designs_of_one_shape_match_and_others_do_not() {
        let fs = 48_000.0;
        let design = |cut: f64, taps: usize| {
            let chain = (Butterworth::lowpass(cut, 4) | Fir::lowpass(taps, cut) | Biquad::peaking(cut / 2.0, 1.0, 3.0)).design(fs).unwrap();
            GpuDesign::new(&chain, 2, 4096, 64, "test", false).unwrap()
        };
        let (a, b) = (design(1000.0, 1025), design(2000.0, 1025));
        assert!(b.fits(&a.stages, a.fir_len).is_ok());
        assert_ne!(a.taps, b.taps, "other coefficients");
        assert_eq!(shape(&a.stages), "sos(2) fir(1025) sos(1)");
        assert!(matches!(a.stages[1], StageForm::Fir { fft: Some(FftForm { part: 256, pcount: 5, log2n: 9, kernel_base: 0 }), taps: 1025, .. }));
        // Another tap count (and so another partition count and history): another shape.
        let c = design(1000.0, 1537);
        let e = c.fits(&a.stages, a.fir_len).unwrap_err().to_string();
        assert!(e.contains("stages sos(2) fir(1537) sos(1) on a chain of stages sos(2) fir(1025) sos(1)"), "{e}");
        // A direct FIR: no FFT form; its history counts both channels.
        let d = design(1000.0, 101);
        assert!(matches!(d.stages[1], StageForm::Fir { fft: None, taps: 101, hist_base: 0, .. }));
        assert_eq!(d.fir_len, 2 * 100);
    }
}
