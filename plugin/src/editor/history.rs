//! Undo and redo of everything the editor changes: the bands, the output gain and the
//! chain stages, as whole snapshots.
//!
//! An edit is what happens between a press (pointer button or key) in the editor and
//! the moment no button is down any more: the state before the press is kept, and if the
//! state after differs, it goes on the undo stack. So every way the editor changes a
//! value (nodes, menus, the table's sliders, imports) is undoable without each widget
//! knowing, and host automation while nothing is pressed is not recorded.

use nice_plug::prelude::*;

use crate::control::params::{BandParams, FerroParams};

/// Most edits kept.
const DEPTH: usize = 200;

/// What one undo step restores: every band parameter and the output gain as the
/// normalised values the host sees (so a restore is exact), and the chain stages.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub normalized: Vec<f32>,
    /// The chain stages as their chain-file text.
    pub chain_json: String,
}

/// Band `bp`'s parameters, each through `f` (a fixed order).
fn each_band_param(bp: &BandParams, mut f: impl FnMut(&dyn Restore)) {
    f(&bp.enabled);
    f(&bp.shape);
    f(&bp.freq_hz);
    f(&bp.gain_db);
    f(&bp.q);
    f(&bp.slope_poles);
    f(&bp.linkwitz_riley);
    f(&bp.bypassed);
    f(&bp.route);
}

fn each_param(params: &FerroParams, mut f: impl FnMut(&dyn Restore)) {
    for bp in &params.bands {
        each_band_param(bp, &mut f);
    }
    f(&params.output_gain_db);
}

/// A parameter read and restored as a normalised value, through a host gesture.
trait Restore {
    fn normalized(&self) -> f32;
    fn restore(&self, setter: &ParamSetter, normalized: f32);
}

impl<P: Param> Restore for P {
    fn normalized(&self) -> f32 {
        self.unmodulated_normalized_value()
    }
    fn restore(&self, setter: &ParamSetter, normalized: f32) {
        if self.unmodulated_normalized_value() != normalized {
            setter.begin_set_parameter(self);
            setter.set_parameter_normalized(self, normalized);
            setter.end_set_parameter(self);
        }
    }
}

impl Snapshot {
    pub fn of(params: &FerroParams) -> Snapshot {
        let mut normalized = Vec::with_capacity(params.bands.len() * 7 + 1);
        each_param(params, |p| normalized.push(p.normalized()));
        Snapshot { normalized, chain_json: params.chain.json() }
    }

    /// Makes the plugin's state this snapshot, through host gestures (only what differs).
    pub fn apply(&self, params: &FerroParams, setter: &ParamSetter) {
        let mut values = self.normalized.iter();
        each_param(params, |p| {
            if let Some(&v) = values.next() {
                p.restore(setter, v);
            }
        });
        if params.chain.json() != self.chain_json {
            // The text came from an installed chain: it parses.
            let _ = params.chain.install_json(&self.chain_json);
        }
    }
}

#[derive(Default)]
pub struct History {
    undo: Vec<Snapshot>,
    redo: Vec<Snapshot>,
    /// The state when the current press began.
    pending: Option<Snapshot>,
}

impl History {
    /// Call once a frame, before the widgets: `pressed` when a button or key went down
    /// this frame.
    pub fn before_frame(&mut self, params: &FerroParams, pressed: bool) {
        if pressed && self.pending.is_none() {
            self.pending = Some(Snapshot::of(params));
        }
    }

    /// Call once a frame, after the widgets: `held` while any pointer button is down.
    pub fn after_frame(&mut self, params: &FerroParams, held: bool) {
        if held {
            return;
        }
        if let Some(before) = self.pending.take() {
            if before != Snapshot::of(params) {
                self.push(before);
            }
        }
    }

    fn push(&mut self, before: Snapshot) {
        if self.undo.len() == DEPTH {
            self.undo.remove(0);
        }
        self.undo.push(before);
        self.redo.clear();
    }

    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }

    /// Restores the state before the last edit.
    pub fn undo(&mut self, params: &FerroParams, setter: &ParamSetter) {
        if let Some(s) = self.undo.pop() {
            self.redo.push(Snapshot::of(params));
            s.apply(params, setter);
        }
        self.pending = None;
    }

    /// Re-applies the last undone edit.
    pub fn redo(&mut self, params: &FerroParams, setter: &ParamSetter) {
        if let Some(s) = self.redo.pop() {
            self.undo.push(Snapshot::of(params));
            s.apply(params, setter);
        }
        self.pending = None;
    }
}
