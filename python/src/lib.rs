//! `ferrofx._ferrofx`: the engine for Python. The public API is the package
//! `ferrofx` (python/ferrofx/__init__.py), which handles axes, dtypes, torch tensors and
//! the stage objects; this module takes C-contiguous numpy arrays in the shapes it
//! names and releases the GIL while it filters.
//!
//! - `Chain`: a validated chain file; `design`, `response`, `process` (float32, the
//!   engine; batches spread over threads), `stream`.
//! - `Stream`: block-by-block filtering with state.
//! - `DeviceStream` (`Chain.device_stream`): a chain resident on a CUDA device over the
//!   caller's device memory (`device.rs`).
//! - `sosfilt64`, `fir64`: float64 arithmetic with SciPy's semantics (`sosfilt`, and
//!   `lfilter` with `a == [1]`), for float64 data: the engine's I/O is float32.

use ferrofx::chain::{Chain as CoreChain, DesignedChain, DesignedStage};
use ferrofx::engine::Engine;
use ferrofx::run::backend::CpuBackend;
use numpy::ndarray::{Array2, Array3};
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

mod device;
mod signal;

fn chain_error(e: ferrofx::ChainError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A chain file, checked against the chain-format contract.
#[pyclass(module = "ferrofx._ferrofx", frozen)]
struct Chain {
    chain: CoreChain,
}

impl Chain {
    fn designed(&self, fs: f64) -> PyResult<DesignedChain> {
        self.chain.design(fs).map_err(chain_error)
    }
}

#[pymethods]
impl Chain {
    /// A chain from chain-file text.
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Chain> {
        Ok(Chain {
            chain: CoreChain::from_json(text).map_err(chain_error)?,
        })
    }

    /// The chain as chain-file text.
    fn to_json(&self) -> String {
        self.chain.to_json()
    }

    fn __len__(&self) -> usize {
        self.chain.stages.len()
    }

    fn __repr__(&self) -> String {
        format!("ferrofx.Chain({} stages)", self.chain.stages.len())
    }

    /// The designed processors at `fs`: dicts `{"type": "sos", "sos": (n, 6) array}` or
    /// `{"type": "fir", "taps": array}`, in order (consecutive IIR stages fused into one
    /// cascade, consecutive FIRs into one kernel, gains folded in).
    fn design<'py>(&self, py: Python<'py>, fs: f64) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let designed = self.designed(fs)?;
        let mut out = Vec::new();
        for stage in &designed.stages {
            let d = PyDict::new(py);
            match stage {
                DesignedStage::Sos(sections) => {
                    let rows: Vec<f64> = sections
                        .iter()
                        .flat_map(|s| {
                            let n = s.normalized();
                            [n.b[0], n.b[1], n.b[2], n.a[0], n.a[1], n.a[2]]
                        })
                        .collect();
                    let arr =
                        Array2::from_shape_vec((sections.len(), 6), rows).expect("6 per section");
                    d.set_item("type", "sos")?;
                    d.set_item("sos", arr.into_pyarray(py))?;
                }
                DesignedStage::Fir(taps) => {
                    d.set_item("type", "fir")?;
                    d.set_item("taps", PyArray1::from_slice(py, taps))?;
                }
            }
            out.push(d);
        }
        Ok(out)
    }

    /// The chain's complex response at `freqs_hz` for sample rate `fs`.
    fn response<'py>(
        &self,
        py: Python<'py>,
        freqs_hz: PyReadonlyArray1<'py, f64>,
        fs: f64,
    ) -> PyResult<Bound<'py, PyArray1<numpy::Complex64>>> {
        let designed = self.designed(fs)?;
        let h: Vec<numpy::Complex64> = freqs_hz
            .as_slice()?
            .iter()
            .map(|&f| {
                let c = designed.response(f);
                numpy::Complex64::new(c.re, c.im)
            })
            .collect();
        Ok(PyArray1::from_vec(py, h))
    }

    /// Filters a float32 array shaped `(items, channels, frames)` (C order) from zero
    /// state; each item separately, items over `threads` threads. Returns a new array.
    fn process<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray3<'py, f32>,
        fs: f64,
        threads: usize,
    ) -> PyResult<Bound<'py, PyArray3<f32>>> {
        let designed = self.designed(fs)?;
        let (items, channels, frames) = x.as_array().dim();
        if channels == 0 {
            return Err(PyValueError::new_err(
                "no channels: the array's channel axis is empty",
            ));
        }
        let mut data = c_order(x.as_array());
        py.allow_threads(|| {
            CpuBackend {
                threads: threads.max(1),
            }
            .filter_batch(&designed, &mut data, items, channels, frames)
        });
        let out = Array3::from_shape_vec((items, channels, frames), data)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(out.into_pyarray(py))
    }

    /// This chain at `fs` resident on CUDA device `device` for `rows` rows, in units of
    /// `unit_frames` frames (see `DeviceStream`); errors name the device and what is
    /// missing (no driver, no device, a cascade float32 would miss).
    fn device_stream(&self, fs: f64, rows: usize, unit_frames: usize, device: usize) -> PyResult<device::DeviceStream> {
        if rows == 0 || unit_frames == 0 {
            return Err(PyValueError::new_err(format!("{rows} rows of {unit_frames} frames")));
        }
        device::DeviceStream::open(&self.designed(fs)?, rows, unit_frames, device)
    }

    /// A stream of blocks through this chain at `fs` for `channels` channels.
    fn stream(&self, fs: f64, channels: usize) -> PyResult<Stream> {
        if channels == 0 {
            return Err(PyValueError::new_err("a stream needs at least one channel"));
        }
        let designed = self.designed(fs)?;
        Ok(Stream {
            engine: Engine::new(&designed, channels, 4096),
            channels,
        })
    }
}

/// Block-by-block filtering: the state is kept between calls.
#[pyclass(module = "ferrofx._ferrofx")]
struct Stream {
    engine: Engine,
    channels: usize,
}

#[pymethods]
impl Stream {
    /// Filters the next block, a float32 array shaped `(channels, frames)`.
    fn process<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let (channels, frames) = x.as_array().dim();
        if channels != self.channels {
            return Err(PyValueError::new_err(format!(
                "a block of {channels} channels for a stream of {}",
                self.channels
            )));
        }
        let mut data = c_order(x.as_array());
        let engine = &mut self.engine;
        let max = engine.max_block_frames();
        py.allow_threads(|| {
            let mut start = 0;
            while start < frames {
                let end = (start + max).min(frames);
                let mut rows: Vec<&mut [f32]> = data
                    .chunks_mut(frames)
                    .map(|r| &mut r[start..end])
                    .collect();
                engine.process(&mut rows);
                start = end;
            }
        });
        let out = Array2::from_shape_vec((channels, frames), data)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(out.into_pyarray(py))
    }

    /// Clears the filter state.
    fn reset(&mut self) {
        self.engine.reset();
    }

    #[getter]
    fn channels(&self) -> usize {
        self.channels
    }
}

/// Runs `f` over the rows of `data` (`frames` apart), the rows spread over the cores.
fn rows_in_parallel(data: &mut [f64], frames: usize, f: impl Fn(&mut [f64]) + Sync) {
    let rows = data.len() / frames.max(1);
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(rows.max(1));
    if threads <= 1 || frames == 0 {
        data.chunks_mut(frames.max(1)).for_each(&f);
        return;
    }
    let per = rows.div_ceil(threads) * frames;
    std::thread::scope(|s| {
        for group in data.chunks_mut(per) {
            let f = &f;
            s.spawn(move || group.chunks_mut(frames).for_each(f));
        }
    });
}

/// `f(rows, states, first, n)` over blocks of `n` consecutive rows of `data` (`frames`
/// each) starting at row `first`, and their states (`width` each, in `state`), the blocks
/// spread over the cores; a block holds a multiple of `group` rows except perhaps the
/// last (so SIMD groups of rows stay whole).
/// The elements of `a` in C order, as an owned vector (copied once whatever its strides).
pub(crate) fn c_order<T: Clone, D: numpy::ndarray::Dimension>(a: numpy::ndarray::ArrayView<'_, T, D>) -> Vec<T> {
    a.as_standard_layout().into_owned().into_raw_vec_and_offset().0
}

pub(crate) fn row_blocks_in_parallel(
    data: &mut [f64],
    frames: usize,
    state: &mut [f64],
    width: usize,
    rows: usize,
    group: usize,
    f: impl Fn(&mut [f64], &mut [f64], usize, usize) + Sync,
) {
    let groups = rows.div_ceil(group.max(1));
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(groups.max(1));
    if threads <= 1 {
        f(data, state, 0, rows);
        return;
    }
    let per = groups.div_ceil(threads) * group.max(1);
    std::thread::scope(|sc| {
        let (mut d, mut s, mut first) = (data, state, 0);
        while first < rows {
            let n = per.min(rows - first);
            let (dh, dt) = d.split_at_mut(n * frames);
            let (sh, st) = s.split_at_mut(n * width);
            let f = &f;
            sc.spawn(move || f(dh, sh, first, n));
            (d, s, first) = (dt, st, first + n);
        }
    });
}

/// Above this many taps the float64 FIR runs by FFT (overlap-save), below it directly.
const FIR64_DIRECT_MAX_TAPS: usize = 128;

/// `y = taps * x` (the first `x.len()` samples of the convolution) in place, directly:
/// four running sums over the reversed taps, so the loop vectorises.
fn fir64_direct(taps_rev: &[f64], row: &mut [f64]) {
    let l = taps_rev.len();
    let mut padded = vec![0.0f64; l - 1 + row.len()];
    padded[l - 1..].copy_from_slice(row);
    for (n, y) in row.iter_mut().enumerate() {
        let window = &padded[n..n + l];
        let mut acc = [0.0f64; 4];
        let (body, tail) = (window.len() / 4 * 4, window.len() % 4);
        for (t, w) in taps_rev[..body]
            .chunks_exact(4)
            .zip(window[..body].chunks_exact(4))
        {
            for j in 0..4 {
                acc[j] += t[j] * w[j];
            }
        }
        let mut sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        for j in 0..tail {
            sum += taps_rev[body + j] * window[body + j];
        }
        *y = sum;
    }
}

/// The same by overlap-save FFT convolution in float64 (FFTs of at least twice the taps).
fn fir64_fft(taps: &[f64], row: &mut [f64]) {
    use realfft::RealFftPlanner;
    let l = taps.len();
    let n = (2 * l).next_power_of_two().max(1024);
    let hop = n - (l - 1);
    let mut planner = RealFftPlanner::<f64>::new();
    let fwd = planner.plan_fft_forward(n);
    let inv = planner.plan_fft_inverse(n);
    let mut time = fwd.make_input_vec();
    let mut h = fwd.make_output_vec();
    time[..l].copy_from_slice(taps);
    let _ = fwd.process(&mut time, &mut h); // lengths match the plan: cannot fail
    let mut spec = fwd.make_output_vec();
    let input = row.to_vec();
    let mut start = 0usize; // first output sample of this block
    while start < input.len() {
        // time[i] = x[start - (l - 1) + i]
        for (i, t) in time.iter_mut().enumerate() {
            let m = start as isize - (l as isize - 1) + i as isize;
            *t = if m >= 0 && (m as usize) < input.len() {
                input[m as usize]
            } else {
                0.0
            };
        }
        let _ = fwd.process(&mut time, &mut spec);
        for (s, hk) in spec.iter_mut().zip(&h) {
            *s *= hk;
        }
        let _ = inv.process(&mut spec, &mut time);
        let count = hop.min(input.len() - start);
        for (j, y) in row[start..start + count].iter_mut().enumerate() {
            *y = time[l - 1 + j] / n as f64;
        }
        start += count;
    }
}

/// SciPy's `lfilter(b, [1.0], x)` in float64 over the rows of `x`, from zero state:
/// directly up to 128 taps, by FFT beyond (float64 rounding either way); rows over the
/// cores.
#[pyfunction]
fn fir64<'py>(
    py: Python<'py>,
    taps: PyReadonlyArray1<'py, f64>,
    x: PyReadonlyArray2<'py, f64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let taps = taps.as_slice()?.to_vec();
    if taps.is_empty() || !taps.iter().all(|v| v.is_finite()) {
        return Err(PyValueError::new_err(
            "b must hold at least one coefficient, all finite",
        ));
    }
    let (rows, frames) = x.as_array().dim();
    let mut data = c_order(x.as_array());
    let taps_rev: Vec<f64> = taps.iter().rev().copied().collect();
    py.allow_threads(|| {
        rows_in_parallel(&mut data, frames, |row| {
            if taps.len() <= FIR64_DIRECT_MAX_TAPS {
                fir64_direct(&taps_rev, row)
            } else {
                fir64_fft(&taps, row)
            }
        })
    });
    let out = Array2::from_shape_vec((rows, frames), data)
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok(out.into_pyarray(py))
}

#[pymodule]
fn _ferrofx(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The chain format's stage types, from the core's one list (the package's tests check
    // that each has a constructor).
    m.add("STAGE_TYPES", ferrofx::chain::STAGE_TYPES.to_vec())?;
    m.add_class::<Chain>()?;
    m.add_class::<Stream>()?;
    m.add_class::<device::DeviceStream>()?;
    m.add_function(wrap_pyfunction!(signal::sosfilt64, m)?)?;
    m.add_function(wrap_pyfunction!(signal::lfilter64, m)?)?;
    m.add_function(wrap_pyfunction!(signal::sosfilt_backward64, m)?)?;
    m.add_function(wrap_pyfunction!(fir64, m)?)?;
    m.add_function(wrap_pyfunction!(device::sosfilt_device64, m)?)?;
    m.add_function(wrap_pyfunction!(device::sosfilt_taps_device64, m)?)?;
    m.add_function(wrap_pyfunction!(device::adjoint_step_device64, m)?)?;
    m.add_function(wrap_pyfunction!(device::adjoint_max_blocks, m)?)?;
    m.add("SIMD", ferrofx::simd_level())?;
    Ok(())
}
