//! The global controls' bar at the top (bypass, output gain, phase mode, the engine's
//! settings in a menu) and the status line at the bottom (what runs where: router
//! figures, latency, rate, block sizes).

use std::sync::atomic::Ordering;

use nice_plug::prelude::*;
use nice_plug_egui::widgets::ParamSlider;

use crate::control::params::{AutoGainChoice, BackendChoice, FerroParams, PhaseChoice, ReserveChoice};
use crate::shared::telemetry::Telemetry;

use super::edits::set_param;

/// The global controls in one bar, left of the view's own toggles: bypass, output gain and
/// phase mode in sight; the engine's settings (backend, GPU block, auto gain, latency
/// reserve, analog-matched bands, delta) in the "Settings" menu.
pub fn global_bar(ui: &mut egui::Ui, params: &FerroParams, t: &Telemetry, setter: &ParamSetter) {
    ui.strong("FerroFX");
    let bypass = params.bypass.value();
    if ui.selectable_label(bypass, "Bypass").clicked() {
        set_param(setter, &params.bypass, !bypass);
    }
    ui.label("Output");
    ui.add(ParamSlider::for_param(&params.output_gain_db, setter).with_width(100.0));
    ui.separator();
    let label = ui.label("Phase");
    let phase = params.phase.value();
    egui::ComboBox::from_id_salt("phase")
        .selected_text(phase.name())
        .show_ui(ui, |ui| {
            for choice in PhaseChoice::ALL {
                if ui.selectable_label(phase == choice, choice.name()).clicked() {
                    set_param(setter, &params.phase, choice);
                }
            }
        })
        .response
        .on_hover_text("Analog: the bands follow their analog prototypes in magnitude and phase (natural phase; a few ms of latency). Linear: the bands on every channel as one linear-phase FIR (half its length in latency). A mode switches while playing where the plugin format takes a new latency then (VST3), or within the latency reserve; otherwise when the host restarts the plugin")
        .labelled_by(label.id);
    ui.menu_button("Settings", |ui| {
        let label = ui.label("Backend");
        let current = params.backend.value();
        egui::ComboBox::from_id_salt("backend")
            .selected_text(format!("{current:?}"))
            .show_ui(ui, |ui| {
                for choice in [BackendChoice::Auto, BackendChoice::Cpu, BackendChoice::Gpu] {
                    if ui.selectable_label(current == choice, format!("{choice:?}")).clicked() {
                        set_param(setter, &params.backend, choice);
                    }
                }
            })
            .response
            .labelled_by(label.id);
        ui.label("GPU min block");
        ui.add(ParamSlider::for_param(&params.gpu_min_block, setter).with_width(90.0));
        let label = ui.label("Auto gain");
        let auto = params.auto_gain.value();
        let name = |c: AutoGainChoice| match c {
            AutoGainChoice::Off => "Off",
            AutoGainChoice::Pink => "Pink",
            AutoGainChoice::KWeighted => "K-weighted",
        };
        egui::ComboBox::from_id_salt("auto_gain")
            .selected_text(name(auto))
            .show_ui(ui, |ui| {
                for choice in [AutoGainChoice::Off, AutoGainChoice::Pink, AutoGainChoice::KWeighted] {
                    if ui.selectable_label(auto == choice, name(choice)).clicked() {
                        set_param(setter, &params.auto_gain, choice);
                    }
                }
            })
            .response
            .labelled_by(label.id);
        if auto != AutoGainChoice::Off {
            let db = f32::from_bits(t.auto_gain_db_bits.load(Ordering::Relaxed));
            ui.label(format!("{db:+.1} dB"));
        }
        let label = ui.label("Latency reserve");
        let reserve = params.latency_reserve.value();
        egui::ComboBox::from_id_salt("latency_reserve")
            .selected_text(reserve.name())
            .show_ui(ui, |ui| {
                for choice in ReserveChoice::ALL {
                    if ui.selectable_label(reserve == choice, choice.name()).clicked() {
                        set_param(setter, &params.latency_reserve, choice);
                    }
                }
            })
            .response
            .on_hover_text("Latency reported all the time, so the phase mode switches up to that FIR length while playing with the latency unchanged, on every format (CLAP takes a new latency only when the host restarts the plugin). Takes effect when the host (re)activates the plugin")
            .labelled_by(label.id);
        let matched = params.matched.value();
        if ui
            .selectable_label(matched, "Analog-matched")
            .on_hover_text("Bells, shelves, tilt, notch and band-pass follow their analog prototype up to Nyquist (off: the cookbook's bilinear designs)")
            .clicked()
        {
            set_param(setter, &params.matched, !matched);
        }
        let delta = params.delta.value();
        if ui.selectable_label(delta, "Delta").on_hover_text("Listen to what the bands and chain change (output minus input)").clicked() {
            set_param(setter, &params.delta, !delta);
        }
    });
}

/// The engine's state in one line: where the chain's blocks go, the latency, the format.
pub fn status_line(ui: &mut egui::Ui, params: &FerroParams, t: &Telemetry) {
    ui.label(gpu_line(params, t));
    ui.separator();
    let latency = t.latency_samples.load(Ordering::Relaxed);
    let fs_hz = f64::from(f32::from_bits(t.sample_rate_bits.load(Ordering::Relaxed)));
    let ms = if fs_hz > 0.0 { format!(" ({:.2} ms)", 1e3 * f64::from(latency) / fs_hz) } else { String::new() };
    ui.label(format!("latency {latency} samples{ms}"));
    if t.restart_pending.load(Ordering::Relaxed) {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            "the new setting waits for the host to restart the plugin (it needs another latency, which this plugin format takes only then; a latency reserve avoids it for the phase mode)",
        );
    }
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
    let top_hz = f64::from(fs) * crate::shared::bands::NYQUIST_SHARE;
    if fs > 0.0 && top_hz < crate::shared::bands::ranges::freq_hz().1 {
        ui.label(format!("bands above {top_hz:.0} Hz are clamped to it at this sample rate"));
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
        _ => crate::shared::telemetry::reason_of(g.reason.load(Ordering::Relaxed)).to_string(),
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
