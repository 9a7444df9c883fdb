//! Undo and redo of everything the editor changes, as whole snapshots of the instance's
//! state (`control/instance_state.rs`: every host parameter and the chain stages).
//!
//! An edit is what happens between a press (pointer button or key) in the editor and
//! the moment no button is down any more: the state before the press is kept, and if the
//! state after differs, it goes on the undo stack. So every way the editor changes a
//! value (nodes, menus, the table's sliders, imports) is undoable without each widget
//! knowing, and host automation while nothing is pressed is not recorded.

use nice_plug::prelude::*;

use crate::control::instance_state::InstanceState as Snapshot;
use crate::control::params::FerroParams;

/// Most edits kept.
const DEPTH: usize = 200;

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
