//! The curve first: at the plugin's default window size, with the drawer closed, the
//! response view is at least 60 % of the window's height and everything fits in the
//! window; the drawer opens from its tab row and closes again, giving the height back;
//! a selected band's controls float beside its node (inside the view) and act on its
//! parameters; every control stays reachable: the global bar, the Settings and View
//! menus, the drawer's panels.

use std::sync::Arc;

use egui_kittest::kittest::Queryable;
use nice_plug::prelude::Param;
use ferrofx_plugin::control::editor_size::DEFAULT_SIZE;
use ferrofx_plugin::control::params::FerroParams;
use ferrofx_plugin::editor::MIN_VIEW_HEIGHT;
use ferrofx_plugin::shared::telemetry::Telemetry;

use super::rig::{rig_sized, Rig};

fn default_size_rig() -> Rig {
    rig_sized(Arc::new(FerroParams::default()), None, Arc::new(Telemetry::default()), false, true, [DEFAULT_SIZE.0, DEFAULT_SIZE.1])
}

#[test]
fn the_view_takes_most_of_the_window_and_the_drawer_gives_way() {
    let mut r = default_size_rig();
    let closed = r.axes().rect;
    println!("view {:.0} x {:.0} in a {} x {} window", closed.width(), closed.height(), DEFAULT_SIZE.0, DEFAULT_SIZE.1);
    assert!(!r.harness.state().drawer, "the drawer starts closed");
    assert!(closed.height() >= 0.6 * DEFAULT_SIZE.1, "the view is {:.0} of {} points high", closed.height(), DEFAULT_SIZE.1);
    // Everything below the view is still inside the window: the meters' row last.
    let clip = r.harness.get_by_label("CLIP").rect();
    assert!(clip.bottom() <= DEFAULT_SIZE.1 + 0.5, "the meters' row ends at {:.0}", clip.bottom());
    assert!(clip.top() >= closed.bottom(), "the meters sit below the view");

    // A tab opens the drawer on its panel; the view gives way but keeps its least height.
    r.harness.get_by_label("Band table").click();
    r.harness.run();
    assert!(r.harness.state().drawer);
    let open = r.axes().rect;
    assert!(open.height() < closed.height() && open.height() >= MIN_VIEW_HEIGHT, "open drawer: view {:.0} high", open.height());
    let name = r.params.bands[0].gain_db.name().to_string();
    assert_eq!(r.harness.query_all_by_label(&name).count(), 1, "the band table shows band 1's gain");
    // The open tab's click closes it: the view has the window again.
    r.harness.get_by_label("Band table").click();
    r.harness.run();
    assert!(!r.harness.state().drawer);
    assert_eq!(r.axes().rect, closed);
    // Another tab opens the drawer on that panel.
    r.harness.get_by_label("Chain stages").click();
    r.harness.run();
    assert!(r.harness.state().drawer);
    r.harness.get_by_label("Add stage");
}

#[test]
fn a_selected_band_has_its_controls_beside_its_node() {
    let mut r = default_size_rig();
    r.peak(3, 1000.0, 6.0);
    let gain = r.params.bands[3].gain_db.name().to_string();
    let bypass = r.params.bands[3].bypassed.name().to_string();
    assert_eq!(r.harness.query_all_by_label(&gain).count(), 0, "nothing floats while no band is selected");
    r.harness.state_mut().nodes.selected[3] = true;
    r.harness.run();
    let axes = r.axes();
    let node = axes.pos(1000.0, 6.0);
    let slider = r.harness.get_by_label(&gain).rect();
    assert!(axes.rect.contains(slider.center()), "the controls float inside the view");
    assert!((slider.center().x - node.x).abs() < 200.0 && (slider.center().y - node.y).abs() < 180.0, "beside the node at {node:?}: {slider:?}");
    r.harness.get_by_label(r.params.bands[3].freq_hz.name());
    r.harness.get_by_label(r.params.bands[3].q.name());
    // They act on the band: its bypass, from the floating panel.
    r.harness.get_by_label(&bypass).click();
    r.harness.run();
    assert!(r.params.bands[3].bypassed.value(), "the floating bypass set the band's parameter");
    // Two bands selected: no floating panel (whose would it be?).
    r.peak(5, 4000.0, -3.0);
    r.harness.state_mut().nodes.selected[5] = true;
    r.harness.run();
    assert_eq!(r.harness.query_all_by_label(&gain).count(), 0);
    // With the band table open, the table holds the controls (one of each name).
    r.harness.state_mut().nodes.selected = [false; 24];
    r.harness.state_mut().nodes.selected[3] = true;
    r.harness.get_by_label("Band table").click();
    r.harness.run();
    assert_eq!(r.harness.query_all_by_label(&gain).count(), 1);
}

#[test]
fn every_global_control_is_reachable_from_the_bar_and_its_menus() {
    let mut r = default_size_rig();
    for label in ["Bypass", "Output", "Phase", "Undo", "Redo", "A", "B", "Settings", "View"] {
        assert!(r.harness.query_all_by_label(label).count() >= 1, "{label} is in the bar");
    }
    // The bar is one row: its items share one line.
    let (phase, view) = (r.harness.get_by_label("Settings").rect(), r.harness.get_by_label("View").rect());
    assert!((phase.center().y - view.center().y).abs() < 1.0, "one bar: {phase:?} and {view:?}");
    // The engine's settings: in the Settings menu, and they act.
    r.harness.get_by_label("Settings").click();
    r.harness.run();
    for label in ["Backend", "GPU min block", "Auto gain", "Latency reserve", "Analog-matched"] {
        assert!(r.harness.query_all_by_label(label).count() >= 1, "{label} is in the Settings menu");
    }
    r.harness.get_by_label("Delta").click();
    r.harness.run();
    assert!(r.params.delta.value(), "Delta from the Settings menu");
    r.harness.key_press(egui::Key::Escape);
    r.harness.run();
    // The view's settings: in the View menu.
    r.harness.get_by_label("View").click();
    r.harness.run();
    for label in ["Range", "Analyser", "Tilt", "Peak hold"] {
        assert!(r.harness.query_all_by_label(label).count() >= 1, "{label} is in the View menu");
    }
    r.harness.get_by_label("±30 dB").click();
    r.harness.run();
    assert_eq!(r.harness.state().range.db(), 30.0);
}
