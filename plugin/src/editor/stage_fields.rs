//! The fields of one chain stage, edited in place: what each stage type of the chain
//! format has (`docs/chain-format.md`), with the contract's own field names in the hover
//! text and the validation message of a failing field right beside it.
//!
//! Numbers are entered unclamped (drag or type): a value the contract refuses is shown
//! with the contract's message and not applied, instead of being silently limited.

use egui::{DragValue, Ui};
use ferrofx::design::{BiquadKind, Cutoff, IirFamily, Response, Window};
use ferrofx::StageKind;

/// Makes a stage type's default.
pub type Maker = fn() -> StageKind;

/// The stage types offered in the "Add stage" menu, with their defaults.
pub const ADDABLE: [(&str, Maker); 10] = [
    ("Butterworth", || iir(IirFamily::Butterworth)),
    ("Chebyshev I", || {
        iir(IirFamily::Chebyshev1 { ripple_db: 1.0 })
    }),
    ("Chebyshev II", || {
        iir(IirFamily::Chebyshev2 {
            attenuation_db: 60.0,
        })
    }),
    ("Elliptic", || {
        iir(IirFamily::Elliptic {
            ripple_db: 0.5,
            attenuation_db: 60.0,
        })
    }),
    ("Bessel", || iir(IirFamily::Bessel)),
    ("Linkwitz-Riley", || StageKind::LinkwitzRiley {
        response: Response::Highpass,
        order: 4,
        cutoff_hz: 80.0,
        matched: false,
    }),
    ("Biquad", || StageKind::Biquad {
        kind: BiquadKind::Peaking,
        freq_hz: 1000.0,
        q: 0.707,
        gain_db: Some(0.0),
        matched: false,
    }),
    ("FIR (designed)", || StageKind::FirDesign {
        response: Response::Lowpass,
        taps: 101,
        cutoff: Cutoff::Single(8000.0),
        window: Window::Hann,
    }),
    ("Gain", || StageKind::Gain { gain_db: 0.0 }),
    ("SOS (rows)", || StageKind::Sos {
        sections: vec![[1.0, 0.0, 0.0, 1.0, 0.0, 0.0]],
    }),
];

fn iir(family: IirFamily) -> StageKind {
    StageKind::Iir {
        family,
        response: Response::Lowpass,
        order: 4,
        cutoff: Cutoff::Single(1000.0),
        matched: false,
    }
}

const RESPONSES: [Response; 4] = [
    Response::Lowpass,
    Response::Highpass,
    Response::Bandpass,
    Response::Bandstop,
];

/// The failing field of the stage being drawn, and the contract's message for it.
pub struct FieldError<'a> {
    pub field: &'a str,
    pub message: &'a str,
}

/// Draws the fields of `kind`; true when one changed. `error` is the failing field of
/// this stage, if any: its message is drawn next to it (and marked shown).
pub fn fields(
    ui: &mut Ui,
    stage: usize,
    kind: &mut StageKind,
    error: Option<&FieldError>,
    shown: &mut bool,
) -> bool {
    let mut f = Fields {
        ui,
        stage,
        error,
        shown,
        changed: false,
    };
    match kind {
        StageKind::Iir {
            family,
            response,
            order,
            cutoff,
            matched,
        } => {
            f.family(family);
            f.response(response, &RESPONSES);
            f.order(order);
            f.cutoff(*response, cutoff);
            if *family == IirFamily::Butterworth && !response.is_band() {
                f.flag("Analog-matched", "matched", matched);
            }
            match family {
                IirFamily::Chebyshev1 { ripple_db } => {
                    f.number("Ripple (dB)", "ripple_db", ripple_db, 0.01)
                }
                IirFamily::Chebyshev2 { attenuation_db } => {
                    f.number("Attenuation (dB)", "attenuation_db", attenuation_db, 0.1)
                }
                IirFamily::Elliptic {
                    ripple_db,
                    attenuation_db,
                } => {
                    f.number("Ripple (dB)", "ripple_db", ripple_db, 0.01);
                    f.number("Attenuation (dB)", "attenuation_db", attenuation_db, 0.1);
                }
                IirFamily::Butterworth | IirFamily::Bessel => {}
            }
        }
        StageKind::LinkwitzRiley {
            response,
            order,
            cutoff_hz,
            matched,
        } => {
            f.response(response, &RESPONSES[..2]);
            f.order(order);
            f.frequency("Cutoff (Hz)", "cutoff_hz", cutoff_hz);
            f.flag("Analog-matched", "matched", matched);
        }
        StageKind::Biquad {
            kind,
            freq_hz,
            q,
            gain_db,
            matched,
        } => {
            f.biquad_kind(kind, gain_db);
            f.frequency("Frequency (Hz)", "freq_hz", freq_hz);
            f.number("Q", "q", q, 0.01);
            if let Some(g) = gain_db {
                f.number("Gain (dB)", "gain_db", g, 0.1);
            }
            f.flag("Analog-matched", "matched", matched);
        }
        StageKind::FirDesign {
            response,
            taps,
            cutoff,
            window,
        } => {
            f.response(response, &RESPONSES);
            f.number("Taps", "taps", taps, 0.2);
            f.cutoff(*response, cutoff);
            f.window(window);
        }
        StageKind::FirGiven { coefficients } => {
            f.ui.label(format!("{} taps", coefficients.len()));
            f.error_for("coefficients");
        }
        StageKind::Sos { sections } => f.sections(sections),
        StageKind::Gain { gain_db } => f.number("Gain (dB)", "gain_db", gain_db, 0.1),
    }
    f.changed
}

struct Fields<'u, 'e> {
    ui: &'u mut Ui,
    stage: usize,
    error: Option<&'e FieldError<'e>>,
    shown: &'u mut bool,
    changed: bool,
}

impl Fields<'_, '_> {
    /// The message of `field`'s error, in red, if this field fails.
    fn error_for(&mut self, field: &str) {
        if let Some(e) = self.error.filter(|e| e.field == field) {
            self.ui
                .colored_label(self.ui.visuals().error_fg_color, e.message);
            *self.shown = true;
        }
    }

    /// A number with a visible label (also its accessible name), unclamped.
    fn number<T: egui::emath::Numeric>(&mut self, label: &str, field: &str, v: &mut T, speed: f64) {
        let l = self.ui.label(label);
        let r = self.ui.add(DragValue::new(v).speed(speed).max_decimals(6)).labelled_by(l.id).on_hover_text(field);
        self.changed |= r.changed();
        self.error_for(field);
    }

    /// A yes/no field as a checkbox with its label (also its accessible name).
    fn flag(&mut self, label: &str, field: &str, v: &mut bool) {
        let r = self.ui.checkbox(v, label).on_hover_text(field);
        self.changed |= r.changed();
        self.error_for(field);
    }

    /// A frequency: dragging moves it by a share of itself.
    fn frequency(&mut self, label: &str, field: &str, v: &mut f64) {
        let speed = (v.abs() * 0.005).max(0.01);
        self.number(label, field, v, speed);
    }

    fn order(&mut self, order: &mut usize) {
        self.number("Order", "order", order, 0.2);
    }

    /// One of `options` in a menu. Options are told apart by `name`, so a variant that
    /// carries values (a Kaiser window's beta) is the same choice whatever its values.
    fn choice<T: Copy>(&mut self, salt: &str, value: &mut T, options: &[T], name: impl Fn(&T) -> &'static str, field: &str) {
        let before = name(value);
        let combo = egui::ComboBox::from_id_salt((salt, self.stage))
            .selected_text(before)
            .show_ui(self.ui, |ui| {
                for option in options {
                    if ui.selectable_label(name(option) == name(value), name(option)).clicked() {
                        *value = *option;
                    }
                }
            })
            .response;
        super::edits::name_combo(&combo, &format!("Stage {} {field}", self.stage + 1), name(value));
        self.changed |= name(value) != before;
        self.error_for(field);
    }

    fn cutoff(&mut self, response: Response, cutoff: &mut Cutoff) {
        // The response decides the form; switching it keeps the frequencies (a single
        // cutoff becomes a half-octave band around it, a band its geometric centre). A
        // pair the contract refuses (low not below high) stays as typed, with its error.
        match (response.is_band(), *cutoff) {
            (true, Cutoff::Single(f)) => {
                *cutoff = Cutoff::Band(f / 2f64.sqrt(), f * 2f64.sqrt());
                self.changed = true;
            }
            (false, Cutoff::Band(lo, hi)) => {
                *cutoff = Cutoff::Single((lo * hi).sqrt());
                self.changed = true;
            }
            _ => {}
        }
        match cutoff {
            Cutoff::Band(lo, hi) => {
                // One message for the pair, beside the second edge.
                let err = self.error.take();
                self.frequency("Low (Hz)", "cutoff_hz", lo);
                self.error = err;
                self.frequency("High (Hz)", "cutoff_hz", hi);
            }
            Cutoff::Single(f) => self.frequency("Cutoff (Hz)", "cutoff_hz", f),
        }
    }

    fn response(&mut self, response: &mut Response, offered: &[Response]) {
        self.choice("response", response, offered, |r| r.name(), "response");
    }

    fn family(&mut self, family: &mut IirFamily) {
        // Extra parameters carry over where the new family has them.
        let (ripple_db, attenuation_db) = match *family {
            IirFamily::Chebyshev1 { ripple_db } => (ripple_db, 60.0),
            IirFamily::Chebyshev2 { attenuation_db } => (1.0, attenuation_db),
            IirFamily::Elliptic { ripple_db, attenuation_db } => (ripple_db, attenuation_db),
            IirFamily::Butterworth | IirFamily::Bessel => (1.0, 60.0),
        };
        let all = [
            IirFamily::Butterworth,
            IirFamily::Chebyshev1 { ripple_db },
            IirFamily::Chebyshev2 { attenuation_db },
            IirFamily::Elliptic { ripple_db, attenuation_db },
            IirFamily::Bessel,
        ];
        self.choice("family", family, &all, |f| f.name(), "type");
    }

    fn biquad_kind(&mut self, kind: &mut BiquadKind, gain_db: &mut Option<f64>) {
        let before = *kind;
        self.choice("biquad", kind, &BiquadKind::ALL, |k| k.name(), "kind");
        if *kind != before {
            // Peaking and shelves have a gain; the other kinds must not.
            *gain_db = if kind.uses_gain() { Some(gain_db.unwrap_or(0.0)) } else { None };
        }
    }

    fn window(&mut self, window: &mut Window) {
        let beta = if let Window::Kaiser { beta } = *window { beta } else { 8.6 };
        let all = [Window::Rectangular, Window::Hann, Window::Hamming, Window::Blackman, Window::Kaiser { beta }];
        self.choice("window", window, &all, |w| w.name(), "window");
        if let Window::Kaiser { beta } = window {
            self.number("Beta", "beta", beta, 0.05);
        }
    }

    /// `sos` rows as text, one `b0 b1 b2 a0 a1 a2` row per line.
    fn sections(&mut self, sections: &mut Vec<[f64; 6]>) {
        let id = egui::Id::unique(("sos_text", self.stage));
        let shown_text = sections
            .iter()
            .map(|r| r.map(|v| v.to_string()).join(" "))
            .collect::<Vec<_>>()
            .join("\n");
        let mut text = self
            .ui
            .data_mut(|d| d.get_temp::<String>(id))
            .unwrap_or_else(|| shown_text.clone());
        let l = self.ui.label("Sections");
        let r = self
            .ui
            .add(
                egui::TextEdit::multiline(&mut text)
                    .desired_rows(2)
                    .code_editor(),
            )
            .labelled_by(l.id);
        if r.changed() {
            match parse_rows(&text) {
                Ok(rows) => {
                    *sections = rows;
                    self.changed = true;
                    self.ui.data_mut(|d| d.insert_temp(id, text));
                }
                Err(why) => {
                    self.ui.data_mut(|d| d.insert_temp(id, text));
                    self.ui.colored_label(self.ui.visuals().error_fg_color, why);
                    *self.shown = true;
                }
            }
        } else if !r.has_focus() {
            self.ui.data_mut(|d| d.remove::<String>(id));
        }
        self.error_for("sections");
    }
}

/// Rows of six numbers separated by spaces or commas, one row per line.
pub fn parse_rows(text: &str) -> Result<Vec<[f64; 6]>, String> {
    let mut rows = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let values: Vec<&str> = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
            .collect();
        if values.len() != 6 {
            return Err(format!(
                "line {}: {} numbers, a row has 6 (b0 b1 b2 a0 a1 a2)",
                n + 1,
                values.len()
            ));
        }
        let mut row = [0.0; 6];
        for (slot, v) in row.iter_mut().zip(&values) {
            *slot = v
                .parse::<f64>()
                .map_err(|_| format!("line {}: {v:?} is not a number", n + 1))?;
        }
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod coverage {
    use super::ADDABLE;

    /// The "Add stage" menu offers every stage type of the chain format (the core's
    /// list; a given FIR comes from an impulse-response file instead), each default a
    /// valid stage: a type added to the core fails here until the editor offers it.
    #[test]
    fn the_add_stage_menu_covers_every_stage_type_of_the_format() {
        let mut offered: Vec<&str> = ADDABLE.iter().map(|(_, make)| make().type_name()).collect();
        offered.push("fir"); // given: an impulse-response file (`control/ir.rs`)
        for t in ferrofx::chain::STAGE_TYPES {
            assert!(offered.contains(t), "the editor offers no `{t}` stage");
        }
        for (label, make) in ADDABLE {
            let chain = ferrofx::Chain::from(ferrofx::Stage::new(make()));
            assert!(chain.design(48_000.0).is_ok(), "{label}'s default does not design: {:?}", chain.design(48_000.0).err());
        }
    }
}
