//! The GPU tests' devices, opened once per test binary: the wgpu adapter and the first
//! CUDA device, or the reason they do not open, printed. Where the environment requires
//! them (`FERROFX_REQUIRE_GPU=1`, set by `scripts/test.sh` with lavapipe installed;
//! `FERROFX_REQUIRE_CUDA=1`, set by the device check) not opening is a failure.

use ferrofx::gpu::cuda::CudaDevice;
use ferrofx::gpu::wgpu::WgpuContext;
use std::sync::{Arc, OnceLock};

/// The wgpu adapter, or `None` (printed) where there is none.
pub fn wgpu_context() -> Option<&'static WgpuContext> {
    static CTX: OnceLock<Option<WgpuContext>> = OnceLock::new();
    CTX.get_or_init(|| match WgpuContext::new() {
        Ok(ctx) => {
            println!("wgpu adapter: {}", ctx.report());
            Some(ctx)
        }
        Err(e) => {
            assert!(std::env::var_os("FERROFX_REQUIRE_GPU").is_none(), "FERROFX_REQUIRE_GPU is set but: {e}");
            println!("skipped: {e}");
            None
        }
    })
    .as_ref()
}

/// The first CUDA device, or `None` (printed) without a driver or device.
pub fn cuda_device() -> Option<&'static Arc<CudaDevice>> {
    static DEV: OnceLock<Option<Arc<CudaDevice>>> = OnceLock::new();
    DEV.get_or_init(|| match CudaDevice::open(0) {
        Ok(d) => {
            println!("cuda device: {}", d.describe());
            Some(d)
        }
        Err(e) => {
            assert!(std::env::var("FERROFX_REQUIRE_CUDA").as_deref() != Ok("1"), "FERROFX_REQUIRE_CUDA is set but: {e}");
            println!("SKIPPED (no CUDA device): {e}");
            None
        }
    })
    .as_ref()
}
