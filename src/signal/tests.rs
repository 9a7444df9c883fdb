//! The kernels against plain loops of SciPy's arithmetic, bit for bit, on every
//! instruction set this CPU has; NaN propagation; refusals.

use super::*;

/// SciPy's `lfilter` loop (scipy/signal/_lfilter.c), written out plainly.
fn lfilter_reference(b: &[f64], a: &[f64], x: &[f64], z: &mut [f64]) -> Vec<f64> {
    let n = a.len().max(b.len());
    let mut bn = vec![0.0; n];
    let mut an = vec![0.0; n];
    bn[..b.len()].copy_from_slice(b);
    an[..a.len()].copy_from_slice(a);
    let a0 = an[0];
    bn.iter_mut().for_each(|v| *v /= a0);
    an.iter_mut().for_each(|v| *v /= a0);
    let k = n - 1;
    x.iter()
        .map(|&xv| {
            if k == 0 {
                return xv * bn[0];
            }
            let y = z[0] + bn[0] * xv;
            for j in 0..k - 1 {
                z[j] = z[j + 1] + xv * bn[j + 1] - y * an[j + 1];
            }
            z[k - 1] = xv * bn[k] - y * an[k];
            y
        })
        .collect()
}

/// SciPy's `sosfilt` loop (scipy/signal/_sosfilt.pyx), written out plainly.
fn sosfilt_reference(sos: &[[f64; 6]], x: &[f64], z: &mut [f64]) -> Vec<f64> {
    x.iter()
        .map(|&xv| {
            let mut x_cur = xv;
            for (s, zi) in sos.iter().zip(z.chunks_exact_mut(2)) {
                let x_new = s[0] * x_cur + zi[0];
                zi[0] = s[1] * x_cur - s[4] * x_new + zi[1];
                zi[1] = s[2] * x_cur - s[5] * x_new;
                x_cur = x_new;
            }
            x_cur
        })
        .collect()
}

fn lcg(seed: &mut u64) -> f64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

/// A stable pole pair (or a real pole with `None`) at a random radius up to 0.999.
fn pole_pair(seed: &mut u64) -> (f64, f64) {
    let r = 0.999 * lcg(seed).abs();
    let th = std::f64::consts::PI * lcg(seed).abs();
    (-2.0 * r * th.cos(), r * r)
}

/// Stable random denominators: the polynomial of random poles.
fn stable_a(order: usize, seed: &mut u64) -> Vec<f64> {
    let mut a = vec![1.0];
    let mut i = 0;
    while i < order {
        let factor = if order - i >= 2 {
            let (c1, c2) = pole_pair(seed);
            i += 2;
            vec![1.0, c1, c2]
        } else {
            i += 1;
            vec![1.0, -0.95 * lcg(seed)]
        };
        let mut next = vec![0.0; a.len() + factor.len() - 1];
        for (j, v) in a.iter().enumerate() {
            for (m, f) in factor.iter().enumerate() {
                next[j + m] += v * f;
            }
        }
        a = next;
    }
    a
}

const ISAS: [Isa; 3] = [Isa::Portable, Isa::Avx2, Isa::Avx512];
const LENGTHS: [usize; 7] = [0, 1, 3, 7, 255, 256, 700];

#[test]
fn lfilter_rows_are_scipys_bits_for_every_order_row_count_and_kernel() {
    let mut seed = 7u64;
    for case in 0..80 {
        let order = case % 14;
        let nb = 1 + (lcg(&mut seed).abs() * (order as f64 + 2.0)) as usize;
        let b: Vec<f64> = (0..nb).map(|_| lcg(&mut seed)).collect();
        let mut a = stable_a(order, &mut seed);
        let scale = 0.5 + lcg(&mut seed).abs() * 3.0;
        a.iter_mut().for_each(|v| *v *= scale);
        let k = a.len().max(b.len()) - 1;
        let rows = 1 + case % 19;
        let frames = LENGTHS[case % LENGTHS.len()];
        let x: Vec<Vec<f64>> = (0..rows)
            .map(|_| (0..frames).map(|_| lcg(&mut seed)).collect())
            .collect();
        let zi: Vec<f64> = (0..rows * k).map(|_| lcg(&mut seed)).collect();
        let mut want_z = zi.clone();
        let want: Vec<Vec<f64>> = x
            .iter()
            .enumerate()
            .map(|(r, xr)| lfilter_reference(&b, &a, xr, &mut want_z[r * k..(r + 1) * k]))
            .collect();
        for isa in ISAS {
            let mut got = x.clone();
            let mut z = zi.clone();
            let mut views: Vec<&mut [f64]> = got.iter_mut().map(|r| r.as_mut_slice()).collect();
            lfilter_rows_with(isa, &b, &a, &mut views, &mut z).unwrap();
            assert!(
                got == want && z == want_z,
                "case {case}: order {order}, {rows} rows, {frames} frames, {isa:?}"
            );
        }
    }
}

#[test]
fn sosfilt_rows_are_scipys_bits_for_every_section_count_row_count_and_kernel() {
    let mut seed = 11u64;
    for case in 0..80 {
        // 1 to 19 sections: every chunk length, and chunks plus a remainder.
        let sections = 1 + case % 19;
        let sos: Vec<[f64; 6]> = (0..sections)
            .map(|_| {
                let (a1, a2) = pole_pair(&mut seed);
                [lcg(&mut seed), lcg(&mut seed), lcg(&mut seed), 1.0, a1, a2]
            })
            .collect();
        let rows = 1 + (case * 7) % 18;
        let frames = LENGTHS[case % LENGTHS.len()];
        let x: Vec<Vec<f64>> = (0..rows)
            .map(|_| (0..frames).map(|_| lcg(&mut seed)).collect())
            .collect();
        let per = 2 * sections;
        let zi: Vec<f64> = (0..rows * per).map(|_| lcg(&mut seed)).collect();
        let mut want_z = zi.clone();
        let want: Vec<Vec<f64>> = x
            .iter()
            .enumerate()
            .map(|(r, xr)| sosfilt_reference(&sos, xr, &mut want_z[r * per..(r + 1) * per]))
            .collect();
        for isa in ISAS {
            let mut got = x.clone();
            let mut z = zi.clone();
            let mut views: Vec<&mut [f64]> = got.iter_mut().map(|r| r.as_mut_slice()).collect();
            sosfilt_rows_with(isa, &sos, &mut views, &mut z).unwrap();
            assert!(
                got == want && z == want_z,
                "case {case}: {sections} sections, {rows} rows, {frames} frames, {isa:?}"
            );
        }
    }
}

#[test]
fn non_finite_values_propagate_as_in_scipy() {
    let sos = [[0.2, 0.4, 0.2, 1.0, -0.5, 0.2]; 5];
    let mut rows: Vec<Vec<f64>> = (0..6)
        .map(|r| {
            (0..300)
                .map(|t| ((t * (r + 3)) % 17) as f64 - 8.0)
                .collect()
        })
        .collect();
    rows[2][100] = f64::NAN;
    let mut z = vec![0.0; 6 * 10];
    let mut views: Vec<&mut [f64]> = rows.iter_mut().map(|r| r.as_mut_slice()).collect();
    sosfilt_rows(&sos, &mut views, &mut z).unwrap();
    assert!(rows[2][99].is_finite() && rows[2][100..].iter().all(|v| v.is_nan()));
    assert!(
        z[20..30].iter().all(|v| v.is_nan())
            && z[..20].iter().chain(&z[30..]).all(|v| v.is_finite())
    );
    assert!(rows[3].iter().all(|v| v.is_finite()));
}

#[test]
fn malformed_arguments_are_refused_by_name() {
    let mut row = vec![1.0, 2.0];
    let mut short = [1.0];
    assert_eq!(
        lfilter_rows(&[1.0], &[0.0, 1.0], &mut [&mut row[..]], &mut [0.0]),
        Err(RowsError::LeadingCoefficient(0.0))
    );
    assert_eq!(
        lfilter_rows(&[], &[1.0], &mut [&mut row[..]], &mut []),
        Err(RowsError::Empty)
    );
    assert_eq!(
        lfilter_rows(&[1.0, 1.0], &[1.0], &mut [&mut row[..]], &mut []),
        Err(RowsError::StateLength {
            rows: 1,
            per_row: 1,
            expected: 1,
            found: 0
        })
    );
    assert_eq!(
        lfilter_rows(&[1.0], &[1.0], &mut [&mut row[..], &mut short[..]], &mut []),
        Err(RowsError::RowLength {
            row: 1,
            expected: 2,
            found: 1
        })
    );
    assert_eq!(
        sosfilt_rows(
            &[[1.0, 0.0, 0.0, 2.0, 0.0, 0.0]],
            &mut [&mut row[..]],
            &mut [0.0; 2]
        ),
        Err(RowsError::SectionA0 {
            section: 0,
            a0: 2.0
        })
    );
    assert_eq!(row, vec![1.0, 2.0], "nothing is written on a refusal");
}
