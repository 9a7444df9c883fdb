//! Opening the CUDA device: the driver library checked before use, the kernels' PTX
//! loaded for the device's architecture.

use super::CudaError;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream};
use std::sync::Arc;

/// The embedded PTX of each kernel file, per target architecture (sm_80 for compute
/// capability 8.0 and newer, which the driver JIT-compiles for its GPU; sm_70 below).
const PTX: [(&str, &str, &str); 8] = [
    ("sos", include_str!("../../../kernels/ptx/sm_70/sos.ptx"), include_str!("../../../kernels/ptx/sm_80/sos.ptx")),
    ("sos64", include_str!("../../../kernels/ptx/sm_70/sos64.ptx"), include_str!("../../../kernels/ptx/sm_80/sos64.ptx")),
    ("fir", include_str!("../../../kernels/ptx/sm_70/fir.ptx"), include_str!("../../../kernels/ptx/sm_80/fir.ptx")),
    ("fft_fir", include_str!("../../../kernels/ptx/sm_70/fft_fir.ptx"), include_str!("../../../kernels/ptx/sm_80/fft_fir.ptx")),
    ("sos_fused", include_str!("../../../kernels/ptx/sm_70/sos_fused.ptx"), include_str!("../../../kernels/ptx/sm_80/sos_fused.ptx")),
    ("sos_pipe", include_str!("../../../kernels/ptx/sm_70/sos_pipe.ptx"), include_str!("../../../kernels/ptx/sm_80/sos_pipe.ptx")),
    ("convert", include_str!("../../../kernels/ptx/sm_70/convert.ptx"), include_str!("../../../kernels/ptx/sm_80/convert.ptx")),
    ("adjoint", include_str!("../../../kernels/ptx/sm_70/adjoint.ptx"), include_str!("../../../kernels/ptx/sm_80/adjoint.ptx")),
];

/// An opened CUDA device with the kernels loaded.
pub struct CudaDevice {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) name: String,
    pub(crate) compute_capability: (i32, i32),
    pub(crate) sos_channels: CudaFunction,
    pub(crate) sos_scan: CudaFunction,
    pub(crate) sos_fused_ends: CudaFunction,
    pub(crate) sos_fused_carry: CudaFunction,
    pub(crate) sos_fused_run: CudaFunction,
    pub(crate) sos_pipe: CudaFunction,
    pub(crate) sos64_channels: CudaFunction,
    pub(crate) sos64_scan: CudaFunction,
    pub(crate) sos64d_channels: CudaFunction,
    pub(crate) sos64d_scan: CudaFunction,
    pub(crate) sos64d_taps_channels: CudaFunction,
    pub(crate) sos64d_taps_scan: CudaFunction,
    pub(crate) sos64d_fused_ends: CudaFunction,
    pub(crate) sos64d_fused_carry: CudaFunction,
    pub(crate) sos64d_fused_run: CudaFunction,
    pub(crate) fir_direct: CudaFunction,
    pub(crate) fir_history: CudaFunction,
    pub(crate) fft_segments: CudaFunction,
    pub(crate) fft_pass: CudaFunction,
    pub(crate) fft_mac: CudaFunction,
    pub(crate) fft_extract: CudaFunction,
    pub(crate) rows_f64_to_f32: CudaFunction,
    pub(crate) rows_f32_to_f64: CudaFunction,
    pub(crate) adjoint_step64: CudaFunction,
    /// How this device's chains run (fixed at opening).
    pub(crate) tuning: super::CudaTuning,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaDevice({})", self.describe())
    }
}

/// Whether the NVIDIA driver library can be loaded (no device is touched).
pub fn driver_present() -> bool {
    // SAFETY: only tries to load libcuda with the dynamic loader and reports whether it
    // could; no CUDA function is called.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

impl CudaDevice {
    /// Opens device `ordinal`. Without a driver, a device or a new enough GPU, the error
    /// says which (`CUDA unavailable: ...`).
    pub fn open(ordinal: usize) -> Result<Arc<CudaDevice>, CudaError> {
        Self::open_tuned(ordinal, super::CudaTuning::default())
    }

    /// [`CudaDevice::open`] with `tuning` for every chain built on it.
    pub fn open_tuned(ordinal: usize, tuning: super::CudaTuning) -> Result<Arc<CudaDevice>, CudaError> {
        if !driver_present() {
            return Err(CudaError::Unavailable("the NVIDIA driver library (libcuda.so) was not found".into()));
        }
        // cudarc panics where a driver entry point is missing (an old driver); such a
        // panic is caught and reported like an absent driver.
        match std::panic::catch_unwind(|| Self::open_present(ordinal, tuning)) {
            Ok(r) => r,
            Err(_) => Err(CudaError::Unavailable("the NVIDIA driver library could not be used (too old, or incomplete)".into())),
        }
    }

    fn open_present(ordinal: usize, tuning: super::CudaTuning) -> Result<Arc<CudaDevice>, CudaError> {
        let count = CudaContext::device_count().map_err(|e| CudaError::Unavailable(format!("the driver lists no device ({e})")))?;
        if ordinal as i32 >= count {
            return Err(CudaError::Unavailable(format!("no CUDA device {ordinal} (the driver lists {count})")));
        }
        let ctx = CudaContext::new(ordinal)?;
        // SAFETY: every job runs on one stream of this backend and is synchronised before
        // its host memory is read or reused, so cudarc's per-buffer events (which a graph
        // capture must not record) are not needed.
        unsafe { ctx.disable_event_tracking() };
        let compute_capability = ctx.compute_capability()?;
        if compute_capability.0 < 7 {
            return Err(CudaError::Unavailable(format!(
                "compute capability {}.{}; FerroFX's kernels need 7.0 (Volta) or newer",
                compute_capability.0, compute_capability.1
            )));
        }
        let name = ctx.name().unwrap_or_else(|_| "an NVIDIA GPU".into());
        let load = |file: &str, function: &str| -> Result<CudaFunction, CudaError> {
            let (_, sm70, sm80) = PTX.iter().find(|p| p.0 == file).expect("a kernel file of the list");
            let ptx = if compute_capability.0 >= 8 { *sm80 } else { *sm70 };
            let module = ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx))?;
            Ok(module.load_function(function)?)
        };
        Ok(Arc::new(CudaDevice {
            sos_channels: load("sos", "ferrofx_sos_channels")?,
            sos_scan: load("sos", "ferrofx_sos_scan")?,
            sos_fused_ends: load("sos_fused", "ferrofx_sos_fused_ends")?,
            sos_fused_carry: load("sos_fused", "ferrofx_sos_fused_carry")?,
            sos_fused_run: load("sos_fused", "ferrofx_sos_fused_run")?,
            sos_pipe: load("sos_pipe", "ferrofx_sos_pipe")?,
            sos64_channels: load("sos64", "ferrofx_sos64_channels")?,
            sos64_scan: load("sos64", "ferrofx_sos64_scan")?,
            sos64d_channels: load("sos64", "ferrofx_sos64d_channels")?,
            sos64d_scan: load("sos64", "ferrofx_sos64d_scan")?,
            sos64d_taps_channels: load("sos64", "ferrofx_sos64d_taps_channels")?,
            sos64d_taps_scan: load("sos64", "ferrofx_sos64d_taps_scan")?,
            sos64d_fused_ends: load("sos_fused", "ferrofx_sos64d_fused_ends")?,
            sos64d_fused_carry: load("sos_fused", "ferrofx_sos64d_fused_carry")?,
            sos64d_fused_run: load("sos_fused", "ferrofx_sos64d_fused_run")?,
            fir_direct: load("fir", "ferrofx_fir_direct")?,
            fir_history: load("fir", "ferrofx_fir_history")?,
            fft_segments: load("fft_fir", "ferrofx_fft_segments")?,
            fft_pass: load("fft_fir", "ferrofx_fft_pass")?,
            fft_mac: load("fft_fir", "ferrofx_fft_mac")?,
            fft_extract: load("fft_fir", "ferrofx_fft_extract")?,
            rows_f64_to_f32: load("convert", "ferrofx_rows_f64_to_f32")?,
            rows_f32_to_f64: load("convert", "ferrofx_rows_f32_to_f64")?,
            adjoint_step64: load("adjoint", "ferrofx_adjoint_step64")?,
            ctx,
            name,
            compute_capability,
            tuning,
        }))
    }

    /// A new CUDA stream on this device (for callers that order their own work with
    /// FerroFX's: tests, the resident and float64 paths' users).
    pub fn new_stream(&self) -> Result<Arc<CudaStream>, CudaError> {
        self.stream()
    }

    /// A new stream for one chain's jobs.
    pub(crate) fn stream(&self) -> Result<Arc<CudaStream>, CudaError> {
        Ok(self.ctx.new_stream()?)
    }

    /// One line: the GPU and its architecture.
    pub fn describe(&self) -> String {
        format!("{} (compute capability {}.{})", self.name, self.compute_capability.0, self.compute_capability.1)
    }
}
