//! `sos`: given second-order sections, SciPy's rows `[b0, b1, b2, a0, a1, a2]`; each must
//! be finite, stable, with `a0 != 0`, and its `b/a0` within float32's reach.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::chain::json::fields;
use crate::chain::validate::{pole_radius, Check, Designed};
use crate::chain::{ChainError, Stage, StageKind, LIMITS_DOC, MAX_COEFFICIENT};
use crate::design::Sos;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    sections: Vec<[f64; 6]>,
}

pub(super) fn parse(index: usize, t: &str, map: Map<String, Value>) -> Result<StageKind, ChainError> {
    Ok(StageKind::Sos { sections: fields::<Wire>(index, t, map)?.sections })
}

pub(super) fn write(m: &mut Map<String, Value>, sections: &[[f64; 6]]) {
    m.insert("sections".into(), json!(sections));
}

// `!(x <= limit)` on purpose: a NaN must fail the check too.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
pub(super) fn design(check: &Check, sections: &[[f64; 6]]) -> Result<Designed, ChainError> {
    if sections.is_empty() {
        return Err(check.fail("sections", "sections must hold at least one section".into()));
    }
    let mut out = Vec::with_capacity(sections.len());
    for (i, row) in sections.iter().enumerate() {
        if let Some(j) = row.iter().position(|v| !v.is_finite()) {
            return Err(check.fail("sections", format!("sections[{i}][{j}] is not a finite number")));
        }
        let s = Sos::from_row(*row);
        if s.a[0] == 0.0 {
            return Err(check.fail("sections", format!("sections[{i}] has a0 = 0")));
        }
        if !s.is_stable() {
            return Err(check.fail("sections", format!("sections[{i}] is unstable: a pole lies on or outside the unit circle (|p| = {:.6})", pole_radius(&s))));
        }
        let n = s.normalized();
        if let Some(j) = n.b.iter().position(|b| !(b.abs() <= MAX_COEFFICIENT)) {
            return Err(check.fail(
                "sections",
                format!(
                    "sections[{i}]: b{j}/a0 = {:e} is larger in magnitude than {MAX_COEFFICIENT:e} (the output would overflow float32; see {LIMITS_DOC})",
                    s.b[j] / s.a[0]
                ),
            ));
        }
        out.push(n);
    }
    Ok(Designed::Sos(out))
}

impl Stage {
    /// A `sos` stage from SciPy rows.
    pub fn sos(sections: Vec<[f64; 6]>) -> Stage {
        Stage::new(StageKind::Sos { sections })
    }
}
