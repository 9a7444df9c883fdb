//! Device arrays: a chain on a CUDA device over memory the caller owns (a PyTorch CUDA
//! tensor, a CuPy array: their `__cuda_array_interface__` gives the address), on the
//! caller's stream, the state kept on the device (`ferrofx::gpu::cuda::CudaResident`).
//! The package (`python/ferrofx/__init__.py`) reads the interface, checks dtype, shape and
//! layout, allocates the output of the input's kind and passes addresses here; this
//! module checks that the addresses are device memory large enough before any copy.

use ferrofx::chain::DesignedChain;
use ferrofx::design::Sos;
use ferrofx::gpu::cuda::{CudaAdjoint64, CudaDevice, CudaResident, CudaSos64, Sample};
use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};

/// The tuning device arrays run with: the defaults, but `FERROFX_CUDA_FUSED=N` runs the
/// float32 cascades through the fused scan in groups of up to N sections, and the PyTorch
/// operator's float64 rows ([`sosfilt_device64`]) through its float64 form (off by
/// default until a device has timed it; for measuring it from Python,
/// `benchmarks/python_gpu.py`).
fn tuning() -> ferrofx::gpu::cuda::CudaTuning {
    let fused_sections = std::env::var("FERROFX_CUDA_FUSED").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    ferrofx::gpu::cuda::CudaTuning { fused_sections, ..Default::default() }
}

/// Devices opened so far, by ordinal (opening loads the kernels: once per process).
fn device(ordinal: usize) -> PyResult<Arc<CudaDevice>> {
    static OPEN: Mutex<Vec<(usize, Arc<CudaDevice>)>> = Mutex::new(Vec::new());
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, d)) = open.iter().find(|(o, _)| *o == ordinal) {
        return Ok(d.clone());
    }
    let d = CudaDevice::open_tuned(ordinal, tuning()).map_err(|e| PyRuntimeError::new_err(format!("cuda:{ordinal}: {e}")))?;
    open.push((ordinal, d.clone()));
    Ok(d)
}

/// A chain resident on one CUDA device for a number of rows.
#[pyclass(module = "ferrofx._ferrofx")]
pub struct DeviceStream {
    /// Behind a lock: Python may call from any thread (one call at a time runs).
    resident: Mutex<CudaResident>,
    ordinal: usize,
}

impl DeviceStream {
    pub fn open(designed: &DesignedChain, rows: usize, unit_frames: usize, ordinal: usize) -> PyResult<DeviceStream> {
        let dev = device(ordinal)?;
        let resident = CudaResident::new(&dev, designed, rows, unit_frames).map_err(|e| PyRuntimeError::new_err(format!("cuda:{ordinal}: {e}")))?;
        Ok(DeviceStream { resident: Mutex::new(resident), ordinal })
    }
}

#[pymethods]
impl DeviceStream {
    /// Filters `frames` frames of every row from device address `input` into `output`
    /// (equal: in place), continuing from the state on the device, ordered on the CUDA
    /// stream `stream` (a raw `cudaStream_t`; 0: the legacy default stream). Returns
    /// without waiting for the device. `float64`: both hold float64 samples (converted
    /// to the chain's float32 and back on the device), else float32.
    #[pyo3(signature = (input, output, frames, stream, float64 = false))]
    fn process_ptr(&mut self, py: Python<'_>, input: u64, output: u64, frames: usize, stream: u64, float64: bool) -> PyResult<()> {
        if input == 0 || output == 0 {
            return Err(PyValueError::new_err("a null device address"));
        }
        let ordinal = self.ordinal;
        let mut guard = self.resident.lock().unwrap_or_else(|e| e.into_inner());
        let resident: &mut CudaResident = &mut guard;
        // SAFETY: the addresses are checked by the call itself (device memory of this
        // context, allocations long enough); the stream comes from the array's framework
        // on this device (the package takes it from torch or CuPy for the array's device),
        // and the package holds the input and output arrays until the call returns, after
        // which their frameworks order any later use on that same stream.
        let sample = if float64 { Sample::F64 } else { Sample::F32 };
        py.allow_threads(|| unsafe { resident.process_raw_as(input, output, frames, stream, sample) })
            .map_err(|e| PyRuntimeError::new_err(format!("cuda:{ordinal}: {e}")))
    }

    /// Back to silence.
    fn reset(&mut self) {
        self.resident.lock().unwrap_or_else(|e| e.into_inner()).reset();
    }

    #[getter]
    fn rows(&self) -> usize {
        self.resident.lock().unwrap_or_else(|e| e.into_inner()).rows()
    }

    #[getter]
    fn unit_frames(&self) -> usize {
        self.resident.lock().unwrap_or_else(|e| e.into_inner()).unit_frames()
    }

    #[getter]
    fn device(&self) -> usize {
        self.ordinal
    }
}

/// Cascades [`sosfilt_device64`] keeps built, the least recently used dropped first. A
/// layer's backward pass uses `2 S + 1` of them for `S` sections (each section alone, each
/// section's all-pole part, the whole cascade) every step: too few and each call would
/// build its cascade again (device allocations, uploads and a wait) instead of launching.
const KEPT_CASCADES: usize = 128;

/// The cascade `sos` (`n x 6`, float64) on device `device` built (or kept from an earlier
/// call: the [`KEPT_CASCADES`] used last, by device and coefficient bits), and `f` run on
/// it without the GIL.
fn with_cascade<'py, T: Send>(py: Python<'py>, sos: &PyReadonlyArray2<'py, f64>, device: usize, f: impl FnOnce(&mut CudaSos64) -> Result<T, ferrofx::gpu::cuda::CudaError> + Send) -> PyResult<T> {
    type Kept = (usize, Vec<u64>, CudaSos64);
    static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());
    let sos = sos.as_array();
    if sos.ncols() != 6 || sos.nrows() == 0 {
        return Err(PyValueError::new_err(format!("sos must have shape (n_sections, 6), got {:?}", sos.shape())));
    }
    let sections: Vec<Sos> = sos.rows().into_iter().map(|r| Sos { b: [r[0], r[1], r[2]], a: [r[3], r[4], r[5]] }).collect();
    let bits: Vec<u64> = sos.iter().map(|v| v.to_bits()).collect();
    let dev = self::device(device)?;
    // The kept cascades' lock is taken without the GIL (another thread may hold the GIL
    // while waiting for it).
    py.allow_threads(|| {
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        // Least recently used first: a hit moves to the end.
        match kept.iter().position(|k| k.0 == device && k.1 == bits) {
            Some(at) => {
                let hit = kept.remove(at);
                kept.push(hit);
            }
            None => {
                let built = CudaSos64::new(&dev, &sections)?;
                if kept.len() == KEPT_CASCADES {
                    kept.remove(0);
                }
                kept.push((device, bits, built));
            }
        }
        let at = kept.len() - 1;
        f(&mut kept[at].2)
    })
    .map_err(|e| PyRuntimeError::new_err(format!("cuda:{device}: {e}")))
}

/// `sos` (`n x 6`, float64) run in float64 over `rows x frames` float64 samples at device
/// address `data`, in place, each row from zero state, ordered on CUDA stream `stream` of
/// device `device`: the PyTorch operator's device path (`ferrofx.torch`) and the SciPy
/// functions' on device arrays (`ferrofx.signal`). Returns without waiting for the device,
/// and `None`; with `zi` (SciPy's `sosfilt` states, `rows x n x 2` values in that order,
/// flat) each row starts from its states and the final states come back in the same form
/// (which waits for the device). The [`KEPT_CASCADES`] cascades used last are kept built
/// (by device and coefficient bits).
#[pyfunction]
#[pyo3(signature = (sos, data, rows, frames, device, stream, zi = None))]
#[allow(clippy::too_many_arguments)]
pub fn sosfilt_device64<'py>(
    py: Python<'py>,
    sos: PyReadonlyArray2<'py, f64>,
    data: u64,
    rows: usize,
    frames: usize,
    device: usize,
    stream: u64,
    zi: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Option<Bound<'py, PyArray1<f64>>>> {
    if data == 0 {
        return Err(PyValueError::new_err("a null device address"));
    }
    let zi: Option<Vec<f64>> = zi.map(|z| z.as_array().iter().copied().collect());
    // SAFETY: the address is checked by the call (device memory of this context, long
    // enough); the stream is the tensor's framework's current stream on this device
    // (the package takes it from torch), and the package holds the tensor until the
    // call returns, after which torch orders any later use on that stream.
    let zf = with_cascade(py, &sos, device, |c| unsafe { c.process_raw_from(data, rows, frames, stream, zi.as_deref()) })?;
    Ok(zf.map(|v| PyArray1::from_vec(py, v)))
}

/// `sos` (`n x 6`, float64) run in float64 over `rows` rows of `frames` float64 samples
/// at device address `input` (`stride` samples apart), each from zero state, every
/// section's output kept: section `i`'s rows at `outs` + `i * rows * stride` samples in
/// the same layout (`CudaSos64::taps_raw`), ordered on CUDA stream `stream` of device
/// `device`. The forward signals of the PyTorch layer's backward pass on CUDA tensors
/// (`ferrofx.torch._device_taps`), from the same kept cascades as [`sosfilt_device64`].
/// Returns without waiting for the device.
#[pyfunction]
#[pyo3(signature = (sos, input, outs, rows, frames, stride, device, stream))]
#[allow(clippy::too_many_arguments)]
pub fn sosfilt_taps_device64<'py>(py: Python<'py>, sos: PyReadonlyArray2<'py, f64>, input: u64, outs: u64, rows: usize, frames: usize, stride: usize, device: usize, stream: u64) -> PyResult<()> {
    if input == 0 || outs == 0 {
        return Err(PyValueError::new_err("a null device address"));
    }
    // SAFETY: both addresses are checked by the call (device memory of this context, long
    // enough, not overlapping); the stream is the tensors' framework's current stream on
    // this device (the package takes it from torch), and the package holds both tensors
    // until the call returns, after which torch orders any later use on that stream.
    with_cascade(py, &sos, device, |c| unsafe { c.taps_raw(input, outs, rows, frames, stride, stream) })
}

/// One backward step of a section (`b` its `b0, b1, b2`) over `rows x row_len` float64
/// samples at device addresses `lam`, `xs`, `ys` (reversed, two leading zeros per row):
/// the next gradient into `g`, each block's six sums into `partial` (room for
/// `6 x ADJOINT_MAX_BLOCKS` doubles), ordered on CUDA stream `stream` of device `device`;
/// returns the number of blocks whose sums were written. The PyTorch operator's backward
/// (`ferrofx.torch._device_step`). Returns without waiting for the device.
#[pyfunction]
#[pyo3(signature = (b, lam, xs, ys, g, partial, rows, row_len, device, stream))]
#[allow(clippy::too_many_arguments)]
pub fn adjoint_step_device64(py: Python<'_>, b: (f64, f64, f64), lam: u64, xs: u64, ys: u64, g: u64, partial: u64, rows: usize, row_len: usize, device: usize, stream: u64) -> PyResult<usize> {
    static KEPT: Mutex<Vec<(usize, CudaAdjoint64)>> = Mutex::new(Vec::new());
    let dev = self::device(device)?;
    let err = |e: ferrofx::gpu::cuda::CudaError| PyRuntimeError::new_err(format!("cuda:{device}: {e}"));
    py.allow_threads(|| {
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        let at = match kept.iter().position(|k| k.0 == device) {
            Some(at) => at,
            None => {
                kept.push((device, CudaAdjoint64::new(&dev)?));
                kept.len() - 1
            }
        };
        // SAFETY: every address is checked by the call (device memory of this context,
        // long enough, g apart from lam); the stream is torch's current stream on this
        // device, and the package holds the tensors until the call returns, after which
        // torch orders any later use on that stream.
        unsafe { kept[at].1.step_raw([b.0, b.1, b.2], lam, xs, ys, g, partial, rows, row_len, stream) }
    })
    .map_err(err)
}

/// The most blocks [`adjoint_step_device64`] writes sums for (the `partial` buffer's rows).
#[pyfunction]
pub fn adjoint_max_blocks() -> usize {
    ferrofx::gpu::cuda::adjoint::ADJOINT_MAX_BLOCKS
}
