//! The egui editor: the response curve of everything the plugin runs (bands, chain
//! stages, output gain), the 24 bands, the chain file import/export, and the processing
//! status (backend, latency, sample rate, block size). It reads parameters and the
//! audio thread's [`Telemetry`] atomics; it never talks to the audio thread otherwise.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use egui::{Color32, Pos2, Stroke, Vec2};
use ferrofx::design::{sos_response, Sos};
use ferrofx::{Chain, DesignedChain};
use nice_plug::prelude::*;
use nice_plug_egui::widgets::ParamSlider;
use nice_plug_egui::{create_egui_editor, EguiEditor, EguiNiceSettings, NiceEguiApp, RepaintNotifier};

use crate::bands::{Band, MAX_SECTIONS_PER_BAND};
use crate::params::{BackendChoice, FerroParams, ShapeChoice};
use crate::preset;
use crate::telemetry::Telemetry;

/// Frequencies the curve is drawn at.
const CURVE_POINTS: usize = 256;
/// Vertical range of the curve in dB.
const CURVE_DB: f32 = 30.0;

/// Editor state (GUI thread only).
pub struct EditorApp {
    params: Arc<FerroParams>,
    telemetry: Arc<Telemetry>,
    gui: Option<nice_plug::context::gui::GuiContext>,
    preset_path: String,
    message: String,
    /// The chain stages designed at the current rate, cached by (chain text, fs).
    chain_cache: Option<(String, f32, Option<DesignedChain>)>,
}

pub fn create(params: Arc<FerroParams>, telemetry: Arc<Telemetry>) -> Option<EguiEditor<EditorApp>> {
    let state = params.editor_state.clone();
    let app = EditorApp {
        params,
        telemetry,
        gui: None,
        preset_path: String::from("preset.json"),
        message: String::new(),
        chain_cache: None,
    };
    create_egui_editor(
        state,
        RepaintNotifier::new(),
        EguiNiceSettings::new()
            .with_tile("FerroFX")
            .with_repaint_poll_interval(std::time::Duration::from_millis(100)),
        app,
    )
}

/// Log-frequency axis: x in 0..1 for 20 Hz..20 kHz.
fn freq_at(x: f32) -> f64 {
    20.0 * 1000f64.powf(x as f64)
}

fn x_of(freq_hz: f64) -> f32 {
    ((freq_hz / 20.0).log10() / 3.0) as f32
}

impl EditorApp {
    fn sample_rate(&self) -> f32 {
        let fs = f32::from_bits(self.telemetry.sample_rate_bits.load(Ordering::Relaxed));
        if fs > 0.0 {
            fs
        } else {
            48_000.0
        }
    }

    fn designed_chain(&mut self, fs: f32) -> Option<DesignedChain> {
        let json = self.params.chain.json();
        let fresh = matches!(&self.chain_cache, Some((j, f, _)) if *j == json && *f == fs);
        if !fresh {
            let designed = self.params.chain.chain().design(fs as f64).ok();
            self.chain_cache = Some((json, fs, designed));
        }
        self.chain_cache.as_ref().and_then(|(_, _, d)| d.clone())
    }

    /// Magnitude in dB of the whole plugin at each curve point, and of each band.
    fn curve(&mut self, fs: f32) -> Vec<f32> {
        let bands = self.params.bands();
        let designed: Vec<Vec<Sos>> = bands
            .iter()
            .map(|b| {
                let mut buf = [Sos::IDENTITY; MAX_SECTIONS_PER_BAND];
                let n = b.clamped(fs as f64).design_into(fs as f64, &mut buf);
                buf[..n].to_vec()
            })
            .collect();
        let chain = self.designed_chain(fs);
        let out_db = self.params.output_gain_db.value();
        (0..CURVE_POINTS)
            .map(|i| {
                let f = freq_at(i as f32 / (CURVE_POINTS - 1) as f32);
                if f >= fs as f64 / 2.0 {
                    return f32::NAN;
                }
                let mut h = designed.iter().map(|s| sos_response(s, f, fs as f64).norm()).product::<f64>();
                if let Some(c) = &chain {
                    h *= c.response(f).norm();
                }
                (20.0 * h.max(1e-12).log10()) as f32 + out_db
            })
            .collect()
    }

    fn draw_curve(&mut self, ui: &mut egui::Ui) {
        let fs = self.sample_rate();
        let (rect, _) = ui.allocate_exact_size(Vec2::new(ui.available_width(), 220.0), egui::Sense::hover());
        let painter = ui.painter_at(rect);
        painter.rect_filled(rect, 4.0, Color32::from_gray(18));
        let to_screen = |x: f32, db: f32| {
            Pos2::new(rect.left() + x * rect.width(), rect.center().y - db / CURVE_DB * rect.height() / 2.0)
        };
        let grid = Stroke::new(1.0, Color32::from_gray(45));
        for f in [50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0] {
            let x = x_of(f);
            painter.line_segment([to_screen(x, -CURVE_DB), to_screen(x, CURVE_DB)], grid);
            let label = if f >= 1000.0 { format!("{}k", f / 1000.0) } else { format!("{f}") };
            painter.text(
                to_screen(x, -CURVE_DB) + Vec2::new(2.0, -12.0),
                egui::Align2::LEFT_TOP,
                label,
                egui::FontId::proportional(10.0),
                Color32::from_gray(120),
            );
        }
        for db in [-24.0, -12.0, 0.0, 12.0, 24.0] {
            let stroke = if db == 0.0 { Stroke::new(1.0, Color32::from_gray(80)) } else { grid };
            painter.line_segment([to_screen(0.0, db), to_screen(1.0, db)], stroke);
            painter.text(
                to_screen(0.0, db) + Vec2::new(2.0, 0.0),
                egui::Align2::LEFT_BOTTOM,
                format!("{db:+} dB"),
                egui::FontId::proportional(10.0),
                Color32::from_gray(120),
            );
        }
        let db = self.curve(fs);
        let points: Vec<Pos2> = db
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(|(i, v)| to_screen(i as f32 / (CURVE_POINTS - 1) as f32, v.clamp(-CURVE_DB, CURVE_DB)))
            .collect();
        painter.add(egui::Shape::line(points, Stroke::new(2.0, Color32::from_rgb(255, 170, 60))));
        for (i, band) in self.params.bands().iter().enumerate() {
            if !band.enabled {
                continue;
            }
            let b = band.clamped(fs as f64);
            let y = match b.shape {
                crate::bands::Shape::Peak | crate::bands::Shape::LowShelf | crate::bands::Shape::HighShelf => b.gain_db as f32,
                _ => 0.0,
            };
            let p = to_screen(x_of(b.freq_hz), y.clamp(-CURVE_DB, CURVE_DB));
            painter.circle_filled(p, 7.0, Color32::from_rgb(60, 140, 220));
            painter.text(p, egui::Align2::CENTER_CENTER, format!("{}", i + 1), egui::FontId::proportional(9.0), Color32::WHITE);
        }
        if rect.is_positive() {
            painter.text(
                rect.right_top() + Vec2::new(-6.0, 4.0),
                egui::Align2::RIGHT_TOP,
                format!("response at {:.1} kHz", fs / 1000.0),
                egui::FontId::proportional(11.0),
                Color32::from_gray(150),
            );
        }
    }

    fn status_bar(&self, ui: &mut egui::Ui, setter: &ParamSetter) {
        let t = &self.telemetry;
        ui.horizontal(|ui| {
            ui.strong("FerroFX");
            ui.separator();
            let bypass = self.params.bypass.value();
            if ui.selectable_label(bypass, "Bypass").clicked() {
                set_param(setter, &self.params.bypass, !bypass);
            }
            ui.label("Output");
            ui.add(ParamSlider::for_param(&self.params.output_gain_db, setter).with_width(120.0));
            ui.separator();
            ui.label("Backend");
            let current = self.params.backend.value();
            egui::ComboBox::from_id_salt("backend").selected_text(format!("{current:?}")).show_ui(ui, |ui| {
                for choice in [BackendChoice::Auto, BackendChoice::Cpu, BackendChoice::Gpu] {
                    if ui.selectable_label(current == choice, format!("{choice:?}")).clicked() {
                        set_param(setter, &self.params.backend, choice);
                    }
                }
            });
            ui.label("GPU min block");
            ui.add(ParamSlider::for_param(&self.params.gpu_min_block, setter).with_width(90.0));
        });
        ui.horizontal(|ui| {
            ui.label(gpu_line(&self.params, t));
            ui.separator();
            ui.label(format!("latency {} samples", t.latency_samples.load(Ordering::Relaxed)));
            ui.separator();
            let fs = f32::from_bits(t.sample_rate_bits.load(Ordering::Relaxed));
            ui.label(format!(
                "{:.1} kHz, {} ch, block {} (max {}), {} EQ sections",
                fs / 1000.0,
                t.channels.load(Ordering::Relaxed),
                t.last_block_frames.load(Ordering::Relaxed),
                t.max_block_frames.load(Ordering::Relaxed),
                t.eq_sections.load(Ordering::Relaxed),
            ));
            let top_hz = f64::from(fs) * crate::bands::NYQUIST_SHARE;
            if fs > 0.0 && top_hz < crate::bands::ranges::freq_hz().1 {
                ui.label(format!("bands above {top_hz:.0} Hz are clamped to it at this sample rate"));
            }
        });
    }

    fn chain_row(&mut self, ui: &mut egui::Ui, setter: &ParamSetter) {
        ui.horizontal(|ui| {
            ui.label("Chain stages run:");
            ui.label(self.params.chain.gpu_status());
        });
        ui.horizontal(|ui| {
            ui.label("Chain:");
            ui.label(self.params.chain.status());
        });
        ui.horizontal(|ui| {
            ui.label("Preset file");
            ui.text_edit_singleline(&mut self.preset_path);
            if ui.button("Import").clicked() {
                self.message = match self.import(setter) {
                    Ok(()) => format!("imported {}", self.preset_path),
                    Err(e) => e,
                };
            }
            if ui.button("Export").clicked() {
                self.message = match self.export() {
                    Ok(()) => format!("exported {}", self.preset_path),
                    Err(e) => e,
                };
            }
            if ui.button("Clear chain").clicked() {
                self.params.chain.install(Chain::new());
            }
            ui.label(&self.message);
        });
    }

    fn import(&mut self, setter: &ParamSetter) -> Result<(), String> {
        // Read with the chain-file size cap: a mistyped path to a recording is an error.
        let chain = Chain::from_file(std::path::Path::new(&self.preset_path)).map_err(|e| format!("{}: {e}", self.preset_path))?;
        let imported = preset::import(&chain);
        for (i, bp) in self.params.bands.iter().enumerate() {
            let band = imported.bands.iter().find(|(n, _)| *n == i).map(|(_, b)| *b);
            let band = band.unwrap_or(Band { enabled: false, ..bp.band() });
            set_band(setter, bp, &band);
        }
        if let Some(g) = imported.output_gain_db {
            set_param(setter, &self.params.output_gain_db, g as f32);
        }
        self.params.chain.install(imported.stages);
        Ok(())
    }

    fn export(&self) -> Result<(), String> {
        let fs = self.sample_rate() as f64;
        let chain = preset::export(&self.params.bands(), &self.params.chain.chain(), crate::params::decimal(self.params.output_gain_db.value()), fs);
        std::fs::write(&self.preset_path, chain.to_json()).map_err(|e| format!("{}: {e}", self.preset_path))
    }

    fn bands_table(&self, ui: &mut egui::Ui, setter: &ParamSetter) {
        egui::ScrollArea::vertical().auto_shrink([false, false]).show(ui, |ui| {
            egui::Grid::new("bands").striped(true).spacing([8.0, 3.0]).show(ui, |ui| {
                for h in ["", "On", "Shape", "Frequency", "Gain", "Q", "Slope", "LR"] {
                    ui.strong(h);
                }
                ui.end_row();
                for (i, bp) in self.params.bands.iter().enumerate() {
                    ui.label(format!("{}", i + 1));
                    param_checkbox(ui, setter, &bp.enabled);
                    let shape = bp.shape.value();
                    egui::ComboBox::from_id_salt(("shape", i)).width(90.0).selected_text(shape_name(shape)).show_ui(ui, |ui| {
                        for s in SHAPES {
                            if ui.selectable_label(s == shape, shape_name(s)).clicked() {
                                set_param(setter, &bp.shape, s);
                            }
                        }
                    });
                    ui.add(ParamSlider::for_param(&bp.freq_hz, setter).with_width(110.0));
                    ui.add(ParamSlider::for_param(&bp.gain_db, setter).with_width(90.0));
                    ui.add(ParamSlider::for_param(&bp.q, setter).with_width(70.0));
                    ui.add(ParamSlider::for_param(&bp.slope_poles, setter).with_width(80.0));
                    param_checkbox(ui, setter, &bp.linkwitz_riley);
                    ui.end_row();
                }
            });
        });
    }
}

const SHAPES: [ShapeChoice; 9] = [
    ShapeChoice::Peak,
    ShapeChoice::LowShelf,
    ShapeChoice::HighShelf,
    ShapeChoice::LowCut,
    ShapeChoice::HighCut,
    ShapeChoice::Notch,
    ShapeChoice::BandPass,
    ShapeChoice::AllPass,
    ShapeChoice::TiltShelf,
];

fn shape_name(s: ShapeChoice) -> &'static str {
    match s {
        ShapeChoice::Peak => "Peak",
        ShapeChoice::LowShelf => "Low shelf",
        ShapeChoice::HighShelf => "High shelf",
        ShapeChoice::LowCut => "Low cut",
        ShapeChoice::HighCut => "High cut",
        ShapeChoice::Notch => "Notch",
        ShapeChoice::BandPass => "Band pass",
        ShapeChoice::AllPass => "All pass",
        ShapeChoice::TiltShelf => "Tilt shelf",
    }
}

/// One complete host gesture setting `p` to `v`.
fn set_param<P: Param>(setter: &ParamSetter, p: &P, v: P::Plain) {
    setter.begin_set_parameter(p);
    setter.set_parameter(p, v);
    setter.end_set_parameter(p);
}

/// A checkbox bound to a boolean parameter.
fn param_checkbox(ui: &mut egui::Ui, setter: &ParamSetter, p: &BoolParam) {
    let mut checked = p.value();
    if ui.checkbox(&mut checked, "").changed() {
        set_param(setter, p, checked);
    }
}

fn set_band(setter: &ParamSetter, bp: &crate::params::BandParams, band: &Band) {
    set_param(setter, &bp.enabled, band.enabled);
    set_param(setter, &bp.shape, ShapeChoice::from_shape(band.shape));
    set_param(setter, &bp.freq_hz, band.freq_hz as f32);
    set_param(setter, &bp.gain_db, band.gain_db as f32);
    set_param(setter, &bp.q, band.q as f32);
    set_param(setter, &bp.slope_poles, (band.slope.db_per_oct / 6) as i32);
    set_param(setter, &bp.linkwitz_riley, band.slope.linkwitz_riley);
}

impl NiceEguiApp for EditorApp {
    fn build(
        &mut self,
        _egui_ctx: egui::Context,
        nice_gui_ctx: nice_plug::context::gui::GuiContext,
        _frame: &mut nice_plug_egui::Frame,
    ) -> Result<(), nice_plug_egui::baseview::HandlerError> {
        self.gui = Some(nice_gui_ctx);
        Ok(())
    }

    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut nice_plug_egui::Frame) {
        let Some(gui) = self.gui.clone() else { return };
        let setter = gui.param_setter();
        self.params.chain.collect_returned();
        self.status_bar(ui, &setter);
        ui.separator();
        self.draw_curve(ui);
        ui.separator();
        self.chain_row(ui, &setter);
        ui.separator();
        self.bands_table(ui, &setter);
    }

    fn editor_closed(&mut self) {
        self.gui = None;
    }
}

/// Where the chain stages' blocks go now, and why, with the router's figures.
pub fn gpu_line(params: &FerroParams, t: &Telemetry) -> String {
    let g = &t.gpu;
    let block = g.block_frames.load(Ordering::Relaxed);
    let choice = params.backend.value();
    if block == 0 {
        return match choice {
            BackendChoice::Cpu => String::from("CPU"),
            _ => format!("CPU ({choice:?} chosen; see the chain line for why)"),
        };
    }
    let us = |a: &std::sync::atomic::AtomicU32| f32::from_bits(a.load(Ordering::Relaxed));
    let fmt = |v: f32| if v.is_finite() { format!("{v:.0} µs") } else { String::from("–") };
    let route = if g.worker_lost.load(Ordering::Relaxed) {
        "CPU (GPU worker lost)"
    } else if g.route_gpu.load(Ordering::Relaxed) {
        "GPU"
    } else {
        "CPU"
    };
    let why = match choice {
        BackendChoice::Gpu => String::from("forced"),
        _ => crate::telemetry::reason_of(g.reason.load(Ordering::Relaxed)).to_string(),
    };
    format!(
        "{route} ({why}): CPU {} / GPU {} median, {} tail, deadline {}; blocks GPU {} CPU {} late {}",
        fmt(us(&g.cpu_median_us)),
        fmt(us(&g.gpu_median_us)),
        fmt(us(&g.gpu_tail_us)),
        fmt(us(&g.deadline_us)),
        g.on_worker.load(Ordering::Relaxed),
        g.on_cpu.load(Ordering::Relaxed),
        g.late.load(Ordering::Relaxed),
    )
}
