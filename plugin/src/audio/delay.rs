//! A delay of up to a fixed number of frames on every channel, whose length can change
//! between blocks without allocating: the dry signal's delay (bypass, delta, solo line up
//! with the latency) and the old band stage's delay while the phase mode switches.
//!
//! The line keeps the last `capacity` frames written whatever its length, so a longer
//! delay set after it has been fed (or [`DelayLine::write`] to) reads real history.

/// Planar delay lines, one per channel, allocated once.
pub struct DelayLine {
    /// One ring of `capacity + 1` frames per channel.
    lines: Vec<Vec<f32>>,
    /// Where the next frame is written.
    pos: usize,
    /// The delay in frames (at most the capacity).
    len: usize,
}

impl DelayLine {
    /// Allocates `channels` lines holding up to `capacity` frames of delay; the delay
    /// starts at 0 and the history silent.
    pub fn new(channels: usize, capacity: usize) -> DelayLine {
        DelayLine { lines: vec![vec![0.0; capacity + 1]; channels], pos: 0, len: 0 }
    }

    /// The longest delay it can give.
    pub fn capacity(&self) -> usize {
        self.lines.first().map_or(0, |l| l.len() - 1)
    }

    /// The delay now.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the delay is 0 (the line passes its input through).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets the delay (clamped to the capacity); the next frame read is the one written
    /// `len` frames before it. No allocation.
    pub fn set_len(&mut self, len: usize) {
        self.len = len.min(self.capacity());
    }

    /// Delays the first `frames` frames of each channel in place. No allocation.
    pub fn process<B: AsMut<[f32]>>(&mut self, bufs: &mut [B], frames: usize) {
        let len = self.len;
        for (line, b) in self.lines.iter_mut().zip(bufs.iter_mut()) {
            let size = line.len();
            let mut w = self.pos;
            for v in b.as_mut()[..frames].iter_mut() {
                line[w] = *v;
                let r = if w >= len { w - len } else { w + size - len };
                *v = line[r];
                w = if w + 1 == size { 0 } else { w + 1 };
            }
        }
        self.advance(frames);
    }

    /// Writes the first `frames` frames of each channel into the history without
    /// reading (so a delay set later has something to read). No allocation.
    pub fn write<B: AsRef<[f32]>>(&mut self, bufs: &[B], frames: usize) {
        for (line, b) in self.lines.iter_mut().zip(bufs.iter()) {
            let size = line.len();
            let mut w = self.pos;
            for &v in &b.as_ref()[..frames] {
                line[w] = v;
                w = if w + 1 == size { 0 } else { w + 1 };
            }
        }
        self.advance(frames);
    }

    fn advance(&mut self, frames: usize) {
        let size = self.capacity() + 1;
        self.pos = (self.pos + frames % size) % size;
    }

    /// Silences the history.
    pub fn clear(&mut self) {
        for l in self.lines.iter_mut() {
            l.fill(0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DelayLine;

    /// Against the definition `y[t] = x[t - len]` (0 before the start), over blocks of
    /// many sizes, with the length changed between blocks and frames written unread.
    #[test]
    fn delays_by_its_length_and_keeps_history_across_length_changes() {
        let x: Vec<f32> = (1..=5000).map(|v| v as f32).collect();
        let mut line = DelayLine::new(2, 700);
        let mut t = 0;
        let mut rng = 12345u64;
        let mut next = |m: usize| {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (rng >> 33) as usize % m
        };
        while t < x.len() {
            let n = (1 + next(400)).min(x.len() - t);
            if next(4) == 0 {
                line.set_len(next(900));
            }
            let mut bufs = vec![x[t..t + n].to_vec(), x[t..t + n].iter().map(|v| -v).collect::<Vec<f32>>()];
            if next(5) == 0 {
                line.write(&bufs, n);
            } else {
                let len = line.len();
                line.process(&mut bufs, n);
                for i in 0..n {
                    let want = if t + i >= len { x[t + i - len] } else { 0.0 };
                    assert_eq!(bufs[0][i], want, "frame {} delayed by {len}", t + i);
                    assert_eq!(bufs[1][i], -want);
                }
            }
            t += n;
        }
        assert_eq!(line.capacity(), 700);
    }
}
