//! Compute pipelines and bind-group layouts, built once per device and shared by every
//! [`super::WgpuChain`] on it (a chain swap only builds buffers and bind groups). The FFT
//! pipelines are built the first time a chain has a long FIR.

use super::{FFT_WGSL, FIR_WGSL, FUSED_WGSL, PIPE_WGSL, SOS64_WGSL, SOS_WGSL};
use std::sync::OnceLock;

/// The SOS and direct-FIR pipelines with their layouts.
pub struct Pipelines {
    pub sos_layout: wgpu::BindGroupLayout,
    pub fir_layout: wgpu::BindGroupLayout,
    pub sos: wgpu::ComputePipeline,
    pub fir: wgpu::ComputePipeline,
    pub hist: wgpu::ComputePipeline,
    fft: OnceLock<FftPipelines>,
    sos64: OnceLock<Sos64Pipeline>,
    fused: OnceLock<FusedPipelines>,
    pipe: OnceLock<PipePipeline>,
}

/// The pipeline shader for short blocks (`shaders/sos_pipe.wgsl`) and its layout: built
/// the first time a chain takes it.
pub struct PipePipeline {
    pub layout: wgpu::BindGroupLayout,
    pub pipeline: wgpu::ComputePipeline,
}

/// The fused cascade scan's three pipelines (`shaders/sos_fused.wgsl`) and their layout:
/// built the first time a chain runs a cascade fused.
pub struct FusedPipelines {
    pub layout: wgpu::BindGroupLayout,
    pub ends: wgpu::ComputePipeline,
    pub carry: wgpu::ComputePipeline,
    pub run: wgpu::ComputePipeline,
}

/// The float64 SOS pipeline (`shaders/sos_f64.wgsl` + `sos.wgsl`) and its layout: built the first time a
/// chain has a cascade that runs in float64, on devices with `SHADER_F64` only.
pub struct Sos64Pipeline {
    pub layout: wgpu::BindGroupLayout,
    pub pipeline: wgpu::ComputePipeline,
}

/// The FFT-partitioned FIR path's pipelines and their layout.
pub struct FftPipelines {
    pub layout: wgpu::BindGroupLayout,
    pub segments: wgpu::ComputePipeline,
    pub pass: wgpu::ComputePipeline,
    pub mac: wgpu::ComputePipeline,
    pub extract: wgpu::ComputePipeline,
}

fn storage_entry(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// Binding 0 of every layout: the parameters (at a dynamic offset on the FFT path).
fn uniform_entry(has_dynamic_offset: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding: 0,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset,
            min_binding_size: None,
        },
        count: None,
    }
}

fn pipeline(device: &wgpu::Device, src: &str, layout: &wgpu::BindGroupLayout, entry: &str) -> wgpu::ComputePipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(entry), source: wgpu::ShaderSource::Wgsl(src.into()) });
    let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(entry),
        bind_group_layouts: &[Some(layout)],
        immediate_size: 0,
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: Some(&pl),
        module: &module,
        entry_point: Some(entry),
        compilation_options: Default::default(),
        cache: None,
    })
}

impl Pipelines {
    pub fn new(device: &wgpu::Device) -> Pipelines {
        let sos_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("sos"),
            entries: &[uniform_entry(false), storage_entry(1, false), storage_entry(2, true), storage_entry(3, true), storage_entry(4, false)],
        });
        let fir_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("fir"),
            entries: &[
                uniform_entry(false),
                storage_entry(1, true),
                storage_entry(2, true),
                storage_entry(3, true),
                storage_entry(4, false),
                storage_entry(5, false),
            ],
        });
        let sos = pipeline(device, SOS_WGSL, &sos_layout, "main");
        let fir = pipeline(device, FIR_WGSL, &fir_layout, "main");
        let hist = pipeline(device, FIR_WGSL, &fir_layout, "history_main");
        Pipelines { sos_layout, fir_layout, sos, fir, hist, fft: OnceLock::new(), sos64: OnceLock::new(), fused: OnceLock::new(), pipe: OnceLock::new() }
    }

    /// The float64 SOS pipeline, built on first use (the device must have `SHADER_F64`).
    pub fn sos64(&self, device: &wgpu::Device) -> &Sos64Pipeline {
        self.sos64.get_or_init(|| {
            let entries = [
                uniform_entry(false),
                storage_entry(1, false),
                storage_entry(2, true),
                storage_entry(3, true),
                storage_entry(4, false),
                storage_entry(5, false),
            ];
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("sos64"), entries: &entries });
            Sos64Pipeline { pipeline: pipeline(device, SOS64_WGSL, &layout, "main"), layout }
        })
    }

    /// The fused scan's pipelines, built on first use.
    pub fn fused(&self, device: &wgpu::Device) -> &FusedPipelines {
        self.fused.get_or_init(|| {
            let entries = [
                uniform_entry(false),
                storage_entry(1, false),
                storage_entry(2, true),
                storage_entry(3, true),
                storage_entry(4, false),
                storage_entry(5, false),
                storage_entry(6, false),
            ];
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("fused"), entries: &entries });
            FusedPipelines {
                ends: pipeline(device, FUSED_WGSL, &layout, "ends_main"),
                carry: pipeline(device, FUSED_WGSL, &layout, "carry_main"),
                run: pipeline(device, FUSED_WGSL, &layout, "run_main"),
                layout,
            }
        })
    }

    /// The pipeline shader, built on first use.
    pub fn pipe(&self, device: &wgpu::Device) -> &PipePipeline {
        self.pipe.get_or_init(|| {
            let entries = [uniform_entry(false), storage_entry(1, false), storage_entry(2, true), storage_entry(3, true), storage_entry(4, false)];
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("pipe"), entries: &entries });
            PipePipeline { pipeline: pipeline(device, PIPE_WGSL, &layout, "main"), layout }
        })
    }

    /// The FFT pipelines, built on first use.
    pub fn fft(&self, device: &wgpu::Device) -> &FftPipelines {
        self.fft.get_or_init(|| {
            let entries = [
                uniform_entry(true),
                storage_entry(1, true),
                storage_entry(2, true),
                storage_entry(3, true),
                storage_entry(4, true),
                storage_entry(5, false),
                storage_entry(6, false),
                storage_entry(7, false),
            ];
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("fft"), entries: &entries });
            FftPipelines {
                segments: pipeline(device, FFT_WGSL, &layout, "segments"),
                pass: pipeline(device, FFT_WGSL, &layout, "fft_pass"),
                mac: pipeline(device, FFT_WGSL, &layout, "mac"),
                extract: pipeline(device, FFT_WGSL, &layout, "extract"),
                layout,
            }
        })
    }
}
