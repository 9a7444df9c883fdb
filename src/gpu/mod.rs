//! The GPU backends. What is shared by every backend lives here; each backend is one
//! module (folder) of its own. The device-neutral parts (offload worker, router,
//! re-blocking) are in [`crate::run`].
//!
//! - [`realize`]: sections in the delta state-space form the shaders run (accurate in
//!   `f32` near `z = 1`), scan tables, the float32 error estimate that decides whether
//!   a cascade may run on a GPU, and a CPU model of the shader arithmetic.
//! - [`fused`]: the fused cascade scan's transfer tables, CPU model and error estimate
//!   (CUDA's throughput kernels, `kernels/sos_fused.cu`; opt-in, [`GpuTuning`]).
//! - [`design`]: a designed chain in the float32 forms a backend uploads and where each
//!   stage lies in them; designs of one shape fit the same device buffers.
//! - [`wgpu`] (feature `wgpu`, on by default): adapter selection and
//!   [`wgpu::WgpuChain`], which runs a designed chain over blocks on the device.
//! - [`cuda`] (feature `cuda`, on by default): the kernels of `kernels/` through the
//!   NVIDIA driver, loaded at run time; [`cuda::CudaChain`] replays a captured graph per
//!   block. Without a driver it opens with a clear error and is not offered.

pub mod design;
pub mod fused;
pub mod pipe;
pub mod realize;
#[cfg(feature = "wgpu")]
pub mod wgpu;
#[cfg(feature = "cuda")]
pub mod cuda;

/// The GPU backends' tuning switches, for measuring what each buys on a given device
/// (`cargo xtask render` and `bench` take them as options; `docs/command-line.md`). The
/// defaults are what the backends were measured fastest with; the output is the same
/// either way, within the reference tolerance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuTuning {
    /// CUDA: offline streams overlap uploads, kernels and downloads on three streams, two
    /// blocks in flight (`false`: one synchronous job a block).
    pub cuda_overlap: bool,
    /// CUDA: blocks up to this many frames run on the channel-parallel kernel, longer
    /// ones on the time-parallel scan (0: every block on the scan).
    pub cuda_sequential_max_frames: usize,
    /// CUDA: float32 cascades run through the fused scan on long blocks, in groups of up
    /// to this many sections (at most 8; 0, the default: off, not yet measured on a
    /// device).
    pub cuda_fused_sections: usize,
    /// wgpu: the same fused scan (`shaders/sos_fused.wgsl`; 0, the default: off).
    pub wgpu_fused_sections: usize,
    /// CUDA: long host-to-host calls register the caller's buffers with the driver and
    /// skip the pinned staging copies (`false`, the default: not yet measured).
    pub cuda_register_host: bool,
    /// CUDA: blocks up to this many frames run sequentially, runs of float32 cascades
    /// through the warp pipeline (their sections at once, a lane each; 0, the default: off, not
    /// yet measured on a device).
    pub cuda_pipeline_max_frames: usize,
    /// wgpu: the same (`shaders/sos_pipe.wgsl`; at most 32,768 frames; 0, the default:
    /// off).
    pub wgpu_pipeline_max_frames: usize,
    /// CUDA: the chains' pinned staging slots are write-combined (`false`, the default:
    /// cached, as host-read memory should be; not yet measured against each other).
    pub cuda_staging_write_combined: bool,
}

impl GpuTuning {
    /// Every switch as `(name, value)`, in the struct's order (benchmarks name the ones
    /// that differ from the defaults).
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let GpuTuning {
            cuda_overlap,
            cuda_sequential_max_frames,
            cuda_fused_sections,
            wgpu_fused_sections,
            cuda_register_host,
            cuda_pipeline_max_frames,
            wgpu_pipeline_max_frames,
            cuda_staging_write_combined,
        } = *self;
        vec![
            ("cuda_overlap", cuda_overlap.to_string()),
            ("cuda_sequential_max_frames", cuda_sequential_max_frames.to_string()),
            ("cuda_fused_sections", cuda_fused_sections.to_string()),
            ("wgpu_fused_sections", wgpu_fused_sections.to_string()),
            ("cuda_register_host", cuda_register_host.to_string()),
            ("cuda_pipeline_max_frames", cuda_pipeline_max_frames.to_string()),
            ("wgpu_pipeline_max_frames", wgpu_pipeline_max_frames.to_string()),
            ("cuda_staging_write_combined", cuda_staging_write_combined.to_string()),
        ]
    }
}

impl Default for GpuTuning {
    fn default() -> GpuTuning {
        GpuTuning { cuda_overlap: true, cuda_sequential_max_frames: 64, cuda_fused_sections: 0, wgpu_fused_sections: 0, cuda_register_host: false, cuda_pipeline_max_frames: 0, wgpu_pipeline_max_frames: 0, cuda_staging_write_combined: false }
    }
}

fn precision_hint(float_bits: u32) -> &'static str {
    if float_bits < 64 {
        "this backend or device has no float64 form of it; the CPU backend runs it in float64"
    } else {
        "the CPU backend runs it in float64"
    }
}

/// Why the GPU path cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GpuError {
    #[error("no GPU adapter found (searched backends {backends}): {why}")]
    NoAdapter { backends: String, why: String },
    #[error("the adapter {adapter} refused to open a device: {why}")]
    Device { adapter: String, why: String },
    #[error("not supported on the GPU path: {what}")]
    Unsupported { what: String },
    /// The GPU's form of a cascade would miss the accuracy the CPU keeps: its float32 form
    /// (`float_bits` 32) on a device without double precision, or its float64 form too
    /// (`float_bits` 64). `stage` counts the designed chain's processors (each run of
    /// consecutive IIR, biquad, `sos` and `gain` stages is one cascade).
    #[error("declined by the GPU path: in float{float_bits}, cascade {stage} of the chain would be off by about {estimate:.1e} of the output peak (the tolerance is 1e-4; {})", precision_hint(*float_bits))]
    Precision { stage: usize, estimate: f64, float_bits: u32 },
    #[error("bad GPU job: {why}")]
    Job { why: String },
    #[error("the GPU device was lost: {why}")]
    DeviceLost { why: String },
}
