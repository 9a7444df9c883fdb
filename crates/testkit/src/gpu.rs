//! The GPU tests' devices, opened once per test binary: the wgpu adapter and the first
//! CUDA device, or the reason they do not open, printed. Where the environment requires
//! them (`FERROFX_REQUIRE_GPU=1`, set by `scripts/test.sh` with lavapipe installed;
//! `FERROFX_REQUIRE_CUDA=1`, set by the device check) not opening is a failure.

use ferrofx::gpu::cuda::CudaDevice;
use ferrofx::gpu::wgpu::{WgpuContext, WgpuResident};
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

/// A device buffer holding `rows` (row-major), usable as input and output.
pub fn upload(ctx: &WgpuContext, rows: &[Vec<f32>]) -> wgpu::Buffer {
    use wgpu::BufferUsages as U;
    let flat: Vec<f32> = rows.iter().flatten().copied().collect();
    let buffer = ctx.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("test rows"),
        size: (flat.len() * 4).max(4) as u64,
        usage: U::STORAGE | U::COPY_SRC | U::COPY_DST,
        mapped_at_creation: false,
    });
    let bytes: Vec<u8> = flat.iter().flat_map(|v| v.to_le_bytes()).collect();
    ctx.queue().write_buffer(&buffer, 0, &bytes);
    buffer
}

/// `rows x frames` floats read back from `buffer`.
pub fn download(ctx: &WgpuContext, buffer: &wgpu::Buffer, rows: usize, frames: usize) -> Vec<Vec<f32>> {
    let bytes = (rows * frames * 4) as u64;
    let read = ctx.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("test read-back"),
        size: bytes.max(4),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = ctx.device().create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &read, 0, bytes);
    let index = ctx.submit(encoder);
    let slice = read.slice(..bytes);
    slice.map_async(wgpu::MapMode::Read, |r| r.expect("map"));
    ctx.wait(Some(index)).unwrap();
    let view = slice.get_mapped_range().expect("mapped");
    let flat: Vec<f32> = view.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    flat.chunks(frames.max(1)).take(rows).map(|r| r.to_vec()).collect()
}

/// The stream `input` through `resident` in calls cut at `cuts` (each call its own input
/// and output buffers, or one buffer in place).
pub fn resident_run(ctx: &WgpuContext, resident: &mut WgpuResident, input: &[Vec<f32>], cuts: &[usize], in_place: bool) -> Vec<Vec<f32>> {
    crate::engine::at_cut_points(input, cuts, |piece| {
        let (rows, frames) = (piece.len(), piece[0].len());
        let src = upload(ctx, &piece);
        let dst = if in_place { src.clone() } else { upload(ctx, &vec![vec![f32::NAN; frames]; rows]) };
        resident.process(&src, &dst, frames).unwrap();
        download(ctx, &dst, rows, frames)
    })
}
