//! SciPy's linear filters in float64 over the rows of an array, with initial and final
//! state: `sosfilt` (second-order sections) and `lfilter` (a transfer function, with
//! feedback), in SciPy's own arithmetic order sample by sample, so the results equal
//! SciPy's bit for bit. The package's `ferrofx.sosfilt`/`lfilter`/`filtfilt`/... handle
//! shapes, axes, dtypes and SciPy's errors around these (python/ferrofx/_signal.py).

use numpy::ndarray::{Array2, Array3};
use numpy::{IntoPyArray, PyArray2, PyArray3, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::rows_in_parallel_with;

/// `sosfilt` over the rows of `x` (`rows x frames`), each row from its state in `zi`
/// (`rows x sections x 2`, zeros when `None`); returns the output and the final states.
/// `sos` rows are `[b0, b1, b2, 1, a1, a2]` (the caller checks `a0 == 1`, as SciPy does).
#[pyfunction]
#[pyo3(signature = (sos, x, zi=None))]
pub fn sosfilt64<'py>(
    py: Python<'py>,
    sos: PyReadonlyArray2<'py, f64>,
    x: PyReadonlyArray2<'py, f64>,
    zi: Option<PyReadonlyArray3<'py, f64>>,
) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyArray3<f64>>)> {
    let sos = sos.as_array();
    if sos.ncols() != 6 {
        return Err(PyValueError::new_err(format!("sos must have shape (n_sections, 6), got {:?}", sos.shape())));
    }
    let sections: Vec<[f64; 5]> = sos.rows().into_iter().map(|r| [r[0], r[1], r[2], r[4], r[5]]).collect();
    let n = sections.len();
    let (rows, frames) = x.as_array().dim();
    let mut data = x.as_array().as_standard_layout().into_owned().into_raw_vec_and_offset().0;
    let mut state = match zi {
        Some(z) => {
            let z = z.as_array();
            if z.dim() != (rows, n, 2) {
                return Err(PyValueError::new_err(format!("zi must have shape {:?}, got {:?}", (rows, n, 2), z.dim())));
            }
            z.as_standard_layout().into_owned().into_raw_vec_and_offset().0
        }
        None => vec![0.0; rows * n * 2],
    };
    py.allow_threads(|| {
        rows_in_parallel_with(&mut data, frames, &mut state, 2 * n, rows, |row, z| {
            for v in row.iter_mut() {
                let mut x = *v;
                for (&[b0, b1, b2, a1, a2], zi) in sections.iter().zip(z.chunks_exact_mut(2)) {
                    let y = b0 * x + zi[0];
                    zi[0] = b1 * x - a1 * y + zi[1];
                    zi[1] = b2 * x - a2 * y;
                    x = y;
                }
                *v = x;
            }
        })
    });
    let y = Array2::from_shape_vec((rows, frames), data).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let zf = Array3::from_shape_vec((rows, n, 2), state).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok((y.into_pyarray(py), zf.into_pyarray(py)))
}

/// `lfilter` over the rows of `x` with `b` and `a` of one length `K + 1`, already divided
/// by `a[0]`, each row from its state in `zi` (`rows x K`, zeros when `None`): transposed
/// direct form II in SciPy's order of operations. Returns the output and final states.
#[pyfunction]
#[pyo3(signature = (b, a, x, zi=None))]
pub fn lfilter64<'py>(
    py: Python<'py>,
    b: PyReadonlyArray1<'py, f64>,
    a: PyReadonlyArray1<'py, f64>,
    x: PyReadonlyArray2<'py, f64>,
    zi: Option<PyReadonlyArray2<'py, f64>>,
) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>)> {
    let (b, a) = (b.as_slice()?.to_vec(), a.as_slice()?.to_vec());
    if b.is_empty() || b.len() != a.len() {
        return Err(PyValueError::new_err(format!("b and a must be non-empty and of one length, got {} and {}", b.len(), a.len())));
    }
    let k = b.len() - 1;
    let (rows, frames) = x.as_array().dim();
    let mut data = x.as_array().as_standard_layout().into_owned().into_raw_vec_and_offset().0;
    let mut state = match zi {
        Some(z) => {
            let z = z.as_array();
            if z.dim() != (rows, k) {
                return Err(PyValueError::new_err(format!("zi must have shape {:?}, got {:?}", (rows, k), z.dim())));
            }
            z.as_standard_layout().into_owned().into_raw_vec_and_offset().0
        }
        None => vec![0.0; rows * k],
    };
    py.allow_threads(|| {
        rows_in_parallel_with(&mut data, frames, &mut state, k, rows, |row, z| {
            if k == 0 {
                row.iter_mut().for_each(|v| *v *= b[0]);
                return;
            }
            for v in row.iter_mut() {
                let x = *v;
                let y = b[0] * x + z[0];
                for j in 0..k - 1 {
                    z[j] = z[j + 1] + x * b[j + 1] - y * a[j + 1];
                }
                z[k - 1] = x * b[k] - y * a[k];
                *v = y;
            }
        })
    });
    let y = Array2::from_shape_vec((rows, frames), data).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let zf = Array2::from_shape_vec((rows, k), state).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok((y.into_pyarray(py), zf.into_pyarray(py)))
}
