//! A/B: two complete states (every parameter and the chain stages:
//! `control/instance_state.rs`) to compare. The one not
//! shown is kept as a snapshot; switching applies it through host gestures (so the host
//! records it and undo covers it). "Copy A to B" (or B to A) makes the other slot the state
//! shown.

use nice_plug::prelude::*;

use crate::control::params::FerroParams;

use crate::control::instance_state::InstanceState as Snapshot;

/// Slot 0 is A, 1 is B.
#[derive(Default)]
pub struct AbSlots {
    pub active: usize,
    /// The other slot's state (`None`: never set; switching to it keeps the current state).
    other: Option<Snapshot>,
}

impl AbSlots {
    pub fn name(slot: usize) -> &'static str {
        if slot == 0 {
            "A"
        } else {
            "B"
        }
    }

    /// Shows slot `slot`, keeping the current state in the other one.
    pub fn switch_to(&mut self, slot: usize, params: &FerroParams, setter: &ParamSetter) {
        if slot == self.active {
            return;
        }
        let current = Snapshot::of(params);
        if let Some(s) = self.other.take() {
            s.apply(params, setter);
        }
        self.other = Some(current);
        self.active = slot;
    }

    /// Copies the state shown into the other slot.
    pub fn copy_to_other(&mut self, params: &FerroParams) {
        self.other = Some(Snapshot::of(params));
    }

    pub fn show(&mut self, ui: &mut egui::Ui, params: &FerroParams, setter: &ParamSetter) {
        for slot in [0, 1] {
            if ui.selectable_label(self.active == slot, AbSlots::name(slot)).on_hover_text("Compare two settings").clicked() {
                self.switch_to(slot, params, setter);
            }
        }
        let label = format!("Copy {} to {}", AbSlots::name(self.active), AbSlots::name(1 - self.active));
        if ui.small_button(label).clicked() {
            self.copy_to_other(params);
        }
    }
}
