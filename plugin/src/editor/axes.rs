//! The response view's coordinates: log frequency across (10 Hz to Nyquist), dB up
//! (a switchable range), for the rectangle the view has this frame. Pure functions, so
//! drawing, hit-testing and the tests agree on every position.

use egui::{Pos2, Rect};

/// Lowest frequency shown.
pub const F_MIN_HZ: f64 = 10.0;

/// Vertical range of the view: ± this many dB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DbRange {
    Three,
    Six,
    #[default]
    Twelve,
    Thirty,
}

impl DbRange {
    pub const ALL: [DbRange; 4] = [DbRange::Three, DbRange::Six, DbRange::Twelve, DbRange::Thirty];

    /// Half the range in dB.
    pub fn db(self) -> f32 {
        match self {
            DbRange::Three => 3.0,
            DbRange::Six => 6.0,
            DbRange::Twelve => 12.0,
            DbRange::Thirty => 30.0,
        }
    }

    /// Spacing of the labelled dB grid lines.
    fn grid_step_db(self) -> f32 {
        match self {
            DbRange::Three => 1.0,
            DbRange::Six => 2.0,
            DbRange::Twelve => 3.0,
            DbRange::Thirty => 6.0,
        }
    }
}

/// The mapping between screen positions and (frequency, gain).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axes {
    pub rect: Rect,
    /// Right edge: Nyquist at the current rate.
    pub f_max_hz: f64,
    pub range: DbRange,
}

impl Axes {
    pub fn new(rect: Rect, sample_rate_hz: f64, range: DbRange) -> Axes {
        Axes { rect, f_max_hz: (sample_rate_hz / 2.0).max(2.0 * F_MIN_HZ), range }
    }

    fn decades(&self) -> f64 {
        (self.f_max_hz / F_MIN_HZ).ln()
    }

    /// Screen x of `freq_hz`.
    pub fn x_of_hz(&self, freq_hz: f64) -> f32 {
        let u = (freq_hz.max(1e-3) / F_MIN_HZ).ln() / self.decades();
        self.rect.left() + (u as f32) * self.rect.width()
    }

    /// Frequency at screen x.
    pub fn hz_at_x(&self, x: f32) -> f64 {
        let u = f64::from((x - self.rect.left()) / self.rect.width().max(1.0));
        F_MIN_HZ * (u * self.decades()).exp()
    }

    /// Screen y of `gain_db`.
    pub fn y_of_db(&self, gain_db: f32) -> f32 {
        self.rect.center().y - gain_db / self.range.db() * self.rect.height() / 2.0
    }

    /// Gain at screen y.
    pub fn db_at_y(&self, y: f32) -> f32 {
        (self.rect.center().y - y) / (self.rect.height().max(1.0) / 2.0) * self.range.db()
    }

    pub fn pos(&self, freq_hz: f64, gain_db: f32) -> Pos2 {
        Pos2::new(self.x_of_hz(freq_hz), self.y_of_db(gain_db))
    }

    /// Share of the width at `x` (0 at the left edge, 1 at the right).
    pub fn x_share(&self, x: f32) -> f32 {
        (x - self.rect.left()) / self.rect.width().max(1.0)
    }

    /// Frequencies of the grid lines (1, 2, 5 per decade) inside the view.
    pub fn grid_hz(&self) -> impl Iterator<Item = f64> + '_ {
        [1.0, 2.0, 5.0]
            .into_iter()
            .cycle()
            .zip((1..).flat_map(|d| std::iter::repeat_n(10f64.powi(d), 3)))
            .map(|(m, decade)| m * decade)
            .take_while(|f| *f < self.f_max_hz)
            .filter(|f| *f > F_MIN_HZ)
    }

    /// Gains of the grid lines, from the bottom to the top.
    pub fn grid_db(&self) -> Vec<f32> {
        let step = self.range.grid_step_db();
        let n = (self.range.db() / step).round() as i32;
        (-n..=n).map(|k| k as f32 * step).collect()
    }
}

/// A frequency label: "50", "2k", "12.5k".
pub fn hz_label(freq_hz: f64) -> String {
    if freq_hz >= 1000.0 {
        let k = freq_hz / 1000.0;
        if (k - k.round()).abs() < 1e-9 {
            format!("{}k", k.round())
        } else {
            format!("{k:.1}k")
        }
    } else {
        format!("{}", freq_hz.round())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_values_round_trip() {
        let rect = Rect::from_min_size(Pos2::new(10.0, 20.0), egui::vec2(800.0, 300.0));
        for range in DbRange::ALL {
            let a = Axes::new(rect, 48_000.0, range);
            assert!((a.x_of_hz(F_MIN_HZ) - rect.left()).abs() < 1e-3);
            assert!((a.x_of_hz(24_000.0) - rect.right()).abs() < 1e-3);
            // One decade is the same width everywhere (log axis).
            let decade = a.x_of_hz(1000.0) - a.x_of_hz(100.0);
            assert!((a.x_of_hz(10_000.0) - a.x_of_hz(1000.0) - decade).abs() < 1e-3);
            for f in [12.0, 100.0, 1234.5, 20_000.0] {
                assert!((a.hz_at_x(a.x_of_hz(f)) / f - 1.0).abs() < 1e-5);
            }
            assert!((a.y_of_db(range.db()) - rect.top()).abs() < 1e-3);
            assert!((a.y_of_db(-range.db()) - rect.bottom()).abs() < 1e-3);
            assert!((a.db_at_y(a.y_of_db(1.7)) - 1.7).abs() < 1e-4);
            let grid = a.grid_db();
            assert_eq!((grid[0], grid[grid.len() - 1]), (-range.db(), range.db()));
        }
        let a = Axes::new(rect, 44_100.0, DbRange::Twelve);
        let grid: Vec<f64> = a.grid_hz().collect();
        assert_eq!(grid.first(), Some(&20.0));
        assert_eq!(grid.last(), Some(&20_000.0));
        assert_eq!(hz_label(2000.0), "2k");
        assert_eq!(hz_label(50.0), "50");
    }
}
