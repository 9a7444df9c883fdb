//! SciPy's linear filters in float64 over the rows of an array, with initial and final
//! state: `sosfilt` (second-order sections) and `lfilter` (a transfer function, with
//! feedback), on the core's `ferrofx::signal` kernels: SciPy's operations in SciPy's order, so
//! SciPy's bits, with rows side by side in the SIMD lanes and blocks of rows over the
//! cores. The package's `ferrofx.signal` functions handle shapes, axes, dtypes and
//! SciPy's errors around these (python/ferrofx/signal.py).

use ferrofx::signal as rows;
use ferrofx::dsp::simd::Isa;
use numpy::ndarray::{Array2, Array3, ArrayView2};
use numpy::{
    IntoPyArray, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyReadonlyArray3,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::{c_order, row_blocks_in_parallel};

/// A filtered array (rows x frames) and its final state (the state's own shape); for the
/// gradients, dL/dx and dL/dsos.
type Filtered<'py, S> = (Bound<'py, PyArray2<f64>>, Bound<'py, S>);

/// `sosfilt` over the rows of `x` (`rows x frames`), each row from its state in `zi`
/// (`rows x sections x 2`, zeros when `None`); returns the output and the final states.
/// `sos` rows are `[b0, b1, b2, 1, a1, a2]` (SciPy's rule, checked here too).
#[pyfunction]
#[pyo3(signature = (sos, x, zi=None))]
pub fn sosfilt64<'py>(
    py: Python<'py>,
    sos: PyReadonlyArray2<'py, f64>,
    x: PyReadonlyArray2<'py, f64>,
    zi: Option<PyReadonlyArray3<'py, f64>>,
) -> PyResult<Filtered<'py, PyArray3<f64>>> {
    let sos = sos.as_array();
    if sos.ncols() != 6 {
        return Err(PyValueError::new_err(format!(
            "sos must have shape (n_sections, 6), got {:?}",
            sos.shape()
        )));
    }
    let sections: Vec<[f64; 6]> = sos
        .rows()
        .into_iter()
        .map(|r| [r[0], r[1], r[2], r[3], r[4], r[5]])
        .collect();
    let n = sections.len();
    let input = x.as_array();
    let (nrows, frames) = input.dim();
    let mut state = match zi {
        Some(z) => {
            let z = z.as_array();
            if z.dim() != (nrows, n, 2) {
                return Err(PyValueError::new_err(format!(
                    "zi must have shape {:?}, got {:?}",
                    (nrows, n, 2),
                    z.dim()
                )));
            }
            c_order(z)
        }
        None => vec![0.0; nrows * n * 2],
    };
    let out = PyArray2::<f64>::zeros(py, [nrows, frames], false);
    filter_into(py, &out, &input, &mut state, 2 * n, |views, z| {
        rows::sosfilt_rows(&sections, views, z)
    })?;
    let zf = Array3::from_shape_vec((nrows, n, 2), state)
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok((out, zf.into_pyarray(py)))
}

/// `lfilter` over the rows of `x` with the transfer function `b / a` (any lengths;
/// normalised by `a[0]` here, as SciPy does), each row from its state in `zi`
/// (`rows x K`, `K = max(len(a), len(b)) - 1`, zeros when `None`). Returns the output and
/// final states.
#[pyfunction]
#[pyo3(signature = (b, a, x, zi=None))]
pub fn lfilter64<'py>(
    py: Python<'py>,
    b: PyReadonlyArray1<'py, f64>,
    a: PyReadonlyArray1<'py, f64>,
    x: PyReadonlyArray2<'py, f64>,
    zi: Option<PyReadonlyArray2<'py, f64>>,
) -> PyResult<Filtered<'py, PyArray2<f64>>> {
    let (b, a) = (b.to_vec()?, a.to_vec()?);
    if b.is_empty() || a.is_empty() {
        return Err(PyValueError::new_err(
            "b and a must each hold at least one coefficient",
        ));
    }
    let k = b.len().max(a.len()) - 1;
    let input = x.as_array();
    let (nrows, frames) = input.dim();
    let mut state = match zi {
        Some(z) => {
            let z = z.as_array();
            if z.dim() != (nrows, k) {
                return Err(PyValueError::new_err(format!(
                    "zi must have shape {:?}, got {:?}",
                    (nrows, k),
                    z.dim()
                )));
            }
            c_order(z)
        }
        None => vec![0.0; nrows * k],
    };
    let out = PyArray2::<f64>::zeros(py, [nrows, frames], false);
    filter_into(py, &out, &input, &mut state, k, |views, z| {
        rows::lfilter_rows(&b, &a, views, z)
    })?;
    let zf = Array2::from_shape_vec((nrows, k), state)
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok((out, zf.into_pyarray(py)))
}

/// `out` = `input` filtered row by row by `filter` (the rows kernels, state `width` per
/// row in `state`), blocks of rows over the cores with the GIL released; a refusal by the
/// kernels (checked before anything is written) becomes a `ValueError`.
fn filter_into(
    py: Python<'_>,
    out: &Bound<'_, PyArray2<f64>>,
    input: &ArrayView2<f64>,
    state: &mut [f64],
    width: usize,
    filter: impl Fn(&mut [&mut [f64]], &mut [f64]) -> Result<(), rows::RowsError> + Sync,
) -> PyResult<()> {
    let mut rw = out.readwrite();
    let data = rw
        .as_slice_mut()
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let (nrows, frames) = input.dim();
    let failed = std::sync::Mutex::new(None);
    py.allow_threads(|| {
        row_blocks_in_parallel(
            data,
            frames,
            state,
            width,
            nrows,
            rows::rows_per_group(Isa::detect()),
            |block, z, first, _| {
                in_chunks(input, first, block, frames, |views| {
                    if let Err(e) = filter(views, z) {
                        *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    }
                });
            },
        )
    });
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(PyValueError::new_err(e.to_string())),
        None => Ok(()),
    }
}

/// Frames per piece of [`in_chunks`]: 8 rows of it are 1 MiB, in L2 between the copy and
/// the filter.
const CHUNK_FRAMES: usize = 16_384;

/// `filter(rows, len)` over `block` (the output rows `first..` of `input`, `frames` each)
/// piece by piece in time, each piece first copied from the input: the output array
/// starts as the input, copied by the thread that filters it just before it does (the
/// copy still in cache), into numpy's pages (which asks the kernel for huge pages on
/// large arrays: a fresh Rust allocation of a minute of 8-channel audio cost 40 ms of
/// page faults). The filter keeps its state from piece to piece.
fn in_chunks(
    input: &ArrayView2<f64>,
    first: usize,
    block: &mut [f64],
    frames: usize,
    mut filter: impl FnMut(&mut [&mut [f64]]),
) {
    if frames == 0 {
        return;
    }
    let mut t0 = 0;
    while t0 < frames {
        let t1 = (t0 + CHUNK_FRAMES).min(frames);
        let mut rows: Vec<&mut [f64]> = block.chunks_mut(frames).map(|r| &mut r[t0..t1]).collect();
        for (r, row) in rows.iter_mut().enumerate() {
            let src = input.row(first + r);
            let src = src.slice(numpy::ndarray::s![t0..t1]);
            match src.as_slice() {
                Some(s) => row.copy_from_slice(s),
                None => row.iter_mut().zip(src.iter()).for_each(|(d, v)| *d = *v),
            }
        }
        filter(&mut rows);
        t0 = t1;
    }
}

/// The gradients through `sosfilt` from zero state over the rows of `x` (`rows x
/// frames`): given `grad_y` (dL/dy, the same shape), returns dL/dx (the same shape) and
/// dL/dsos (`n_sections x 6`, summed over the rows). Float64; rows over the cores.
#[pyfunction]
pub fn sosfilt_backward64<'py>(
    py: Python<'py>,
    sos: PyReadonlyArray2<'py, f64>,
    x: PyReadonlyArray2<'py, f64>,
    grad_y: PyReadonlyArray2<'py, f64>,
) -> PyResult<Filtered<'py, PyArray2<f64>>> {
    let sos = sos.as_array();
    if sos.ncols() != 6 {
        return Err(PyValueError::new_err(format!("sos must have shape (n_sections, 6), got {:?}", sos.shape())));
    }
    let sections: Vec<[f64; 6]> = sos.rows().into_iter().map(|r| [r[0], r[1], r[2], r[3], r[4], r[5]]).collect();
    let (x, g) = (x.as_array(), grad_y.as_array());
    if x.dim() != g.dim() {
        return Err(PyValueError::new_err(format!("grad_y has shape {:?} where y has {:?}", g.dim(), x.dim())));
    }
    let (nrows, frames) = x.dim();
    let (x, g) = (c_order(x), c_order(g));
    let mut grad_x = vec![0.0f64; nrows * frames];
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(nrows.max(1));
    let per = nrows.div_ceil(threads.max(1)).max(1);
    let n = sections.len();
    let partials: Vec<Result<Vec<[f64; 6]>, rows::RowsError>> = py.allow_threads(|| {
        std::thread::scope(|sc| {
            let handles: Vec<_> = grad_x
                .chunks_mut((per * frames).max(1))
                .enumerate()
                .map(|(t, gx)| {
                    let (x, g, sections) = (&x, &g, &sections);
                    sc.spawn(move || {
                        // This thread's rows, through the grouped backward (several rows'
                        // passes interleaved; each row's result the row function's bits).
                        let mut gs = vec![[0.0f64; 6]; n];
                        let first = t * per;
                        let mut outs: Vec<&mut [f64]> = gx.chunks_mut(frames.max(1)).collect();
                        let span = |r: usize| r * frames..(r + 1) * frames;
                        let xs: Vec<&[f64]> = (first..first + outs.len()).map(|r| &x[span(r)]).collect();
                        let gys: Vec<&[f64]> = (first..first + outs.len()).map(|r| &g[span(r)]).collect();
                        rows::sosfilt_backward_rows(sections, &xs, &gys, &mut outs, &mut gs)?;
                        Ok(gs)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("a gradient thread panicked")).collect()
        })
    });
    let mut grad_sos = Array2::<f64>::zeros((n, 6));
    for part in partials {
        let part = part.map_err(|e| PyValueError::new_err(e.to_string()))?;
        for (s, row) in part.iter().enumerate() {
            for k in 0..6 {
                grad_sos[[s, k]] += row[k];
            }
        }
    }
    let grad_x = Array2::from_shape_vec((nrows, frames), grad_x).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok((grad_x.into_pyarray(py), grad_sos.into_pyarray(py)))
}
