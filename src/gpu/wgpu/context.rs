//! The device: adapter selection, its report, the device-loss flag, and the gate that
//! serialises submissions and polls of every user of the device.

use crate::gpu::GpuError;
use std::sync::atomic::{AtomicBool, Ordering};
use super::pipelines::{FftPipelines, Pipelines};
use std::sync::{Arc, Mutex, OnceLock};

/// What adapter was found and is used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterReport {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
}

impl AdapterReport {
    /// True for a software rasteriser (lavapipe/llvmpipe, WARP): real wgpu, CPU speed.
    pub fn is_cpu(&self) -> bool {
        self.device_type == "Cpu"
    }
}

impl std::fmt::Display for AdapterReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}, {}", self.name, self.backend, self.device_type)?;
        if !self.driver.is_empty() {
            write!(f, ", {}", self.driver)?;
        }
        write!(f, ")")
    }
}

/// A device and queue with the report of where they came from.
#[derive(Clone)]
pub struct WgpuContext {
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    pub(super) report: AdapterReport,
    pub(super) limits: wgpu::Limits,
    pub(super) lost: Arc<AtomicBool>,
    /// The device runs float64 shaders (`SHADER_F64` asked for and granted), and
    /// `FERROFX_WGPU_FLOAT64=0` does not turn them off.
    float64: bool,
    /// Chains built on this context run float32 cascades through the fused scan in
    /// groups of up to this many sections (0: off; [`crate::gpu::GpuTuning`]).
    fused_sections: usize,
    /// Chains built on this context run blocks up to this many frames through the
    /// pipeline shader (0: off; [`crate::gpu::GpuTuning`]).
    pipeline_frames: usize,
    /// Serialises submissions and polls of every user of this device: wgpu-core 30 trips
    /// an internal assertion ("current submission index should be at least the wait
    /// submission index") when one thread submits while another polls. GPU work of
    /// different chains still overlaps; only the calls themselves take turns.
    pub(super) gate: Arc<Mutex<()>>,
    /// The pipelines every chain on this device shares, built on first use.
    shared: Arc<OnceLock<Pipelines>>,
}

impl WgpuContext {
    /// Opens the best adapter of the backends `WGPU_BACKEND` names (default: all primary
    /// ones), preferring a discrete GPU. Errors name what was searched and found.
    pub fn new() -> Result<WgpuContext, GpuError> {
        let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .map_err(|e| GpuError::NoAdapter {
            backends: format!("{backends:?}"),
            why: if std::env::var_os("WGPU_BACKEND").is_some() {
                format!("{e} (WGPU_BACKEND restricts the search)")
            } else {
                e.to_string()
            },
        })?;
        let info = adapter.get_info();
        let report = AdapterReport {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: [info.driver.as_str(), info.driver_info.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join(" "),
        };
        // Ask for the adapter's own buffer limits: long FIR histories need more than the
        // WebGPU defaults.
        let supported = adapter.limits();
        let limits = wgpu::Limits {
            max_storage_buffer_binding_size: supported.max_storage_buffer_binding_size,
            max_buffer_size: supported.max_buffer_size,
            ..wgpu::Limits::default()
        };
        // Double precision where the adapter has it: the cascades whose float32 form would
        // miss the tolerance run in float64 there instead of being declined.
        let float64 = adapter.features().contains(wgpu::Features::SHADER_F64) && std::env::var("FERROFX_WGPU_FLOAT64").as_deref() != Ok("0");
        let required_features = if float64 { wgpu::Features::SHADER_F64 } else { wgpu::Features::empty() };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("ferrofx"),
            required_limits: limits.clone(),
            required_features,
            ..Default::default()
        }))
        .map_err(|e| GpuError::Device { adapter: report.to_string(), why: e.to_string() })?;
        let lost = Arc::new(AtomicBool::new(false));
        {
            let lost = lost.clone();
            device.set_device_lost_callback(move |_, _| lost.store(true, Ordering::Release));
        }
        Ok(WgpuContext { device, queue, report, limits, lost, float64, fused_sections: 0, pipeline_frames: 0, gate: Arc::new(Mutex::new(())), shared: Arc::new(OnceLock::new()) })
    }

    pub fn report(&self) -> &AdapterReport {
        &self.report
    }

    /// This context with chains built on it running the fused scan in groups of up to
    /// `sections` sections (0: off), as [`super::WgpuChain::set_fused`].
    pub fn with_fused_sections(mut self, sections: usize) -> WgpuContext {
        self.fused_sections = sections;
        self
    }

    /// This context with chains built on it running blocks of up to `frames` frames
    /// through the pipeline shader (0: off), as [`super::WgpuChain::set_pipeline`].
    pub fn with_pipeline_frames(mut self, frames: usize) -> WgpuContext {
        self.pipeline_frames = frames;
        self
    }

    /// The pipeline limit chains built here take (0: off).
    pub fn pipeline_frames(&self) -> usize {
        self.pipeline_frames
    }

    /// The fused scan's group size chains built here take (0: off).
    pub fn fused_sections(&self) -> usize {
        self.fused_sections
    }

    /// Whether cascades whose float32 form would miss the tolerance run in float64 here
    /// (the adapter has `SHADER_F64`; `FERROFX_WGPU_FLOAT64=0` turns it off, and those
    /// cascades are then declined as on a device without it).
    pub fn has_float64(&self) -> bool {
        self.float64
    }

    /// The shared SOS and direct-FIR pipelines (built on first use).
    pub(super) fn pipelines(&self) -> &Pipelines {
        self.shared.get_or_init(|| Pipelines::new(&self.device))
    }

    /// The shared FFT pipelines (built on first use).
    pub(super) fn fft_pipelines(&self) -> &FftPipelines {
        self.pipelines().fft(&self.device)
    }

    /// The device, for making buffers that [`super::WgpuResident`] filters. Submit and
    /// wait through [`WgpuContext::submit`] and [`WgpuContext::wait`] (wgpu-core 30 trips
    /// on a submit in one thread during a poll in another; these take turns).
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The queue, for writing those buffers.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// Submits the caller's own commands (uploads, read-backs), taking turns with
    /// FerroFX's other users of this device.
    pub fn submit(&self, encoder: wgpu::CommandEncoder) -> wgpu::SubmissionIndex {
        let _turn = self.gate.lock().unwrap_or_else(|e| e.into_inner());
        self.queue.submit([encoder.finish()])
    }

    /// Waits until the device has finished `submission` (or all work, with `None`),
    /// taking turns with FerroFX's other users of this device.
    pub fn wait(&self, submission: Option<wgpu::SubmissionIndex>) -> Result<(), GpuError> {
        if self.is_lost() {
            return Err(GpuError::DeviceLost { why: "the device was lost earlier".into() });
        }
        let _turn = self.gate.lock().unwrap_or_else(|e| e.into_inner());
        self.device
            .poll(wgpu::PollType::Wait { submission_index: submission, timeout: Some(super::JOB_TIMEOUT) })
            .map(|_| ())
            .map_err(|e| GpuError::DeviceLost { why: e.to_string() })
    }

    /// True once the device reported loss.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }
}

impl WgpuContext {
    /// Destroys the device, as a driver reset would (for tests of the loss path; feature
    /// `fault-injection`): every later job on it fails with [`GpuError::DeviceLost`].
    #[cfg(feature = "fault-injection")]
    pub fn simulate_device_loss(&self) {
        self.device.destroy();
        self.lost.store(true, Ordering::Release);
    }
}
