//! Progress of a long command: an indicatif bar with rate and ETA when stderr is a terminal,
//! otherwise an info event every few seconds (so a log collector sees the command advance
//! without a line per page).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// How often a progress line is written when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(5);

/// What the counted units are, for the bar's template.
#[derive(Clone, Copy)]
pub(super) enum Unit {
    /// Log entries (events).
    Entries,
    /// Bytes of an input file.
    Bytes,
}

/// The progress of one command.
pub(super) struct Progress {
    label: &'static str,
    total: Option<u64>,
    bar: Option<ProgressBar>,
    started: Instant,
    last_line: Instant,
}

impl Progress {
    /// Progress towards `total` units (unknown when `None`), labelled `label`.
    pub(super) fn new(label: &'static str, unit: Unit, total: Option<u64>) -> Progress {
        let now = Instant::now();
        let bar = std::io::stderr().is_terminal().then(|| {
            let template = match (unit, total) {
                (Unit::Entries, Some(_)) => "{msg} [{bar:30}] {human_pos}/{human_len} ({rate}, ETA {eta})",
                (Unit::Bytes, Some(_)) => {
                    "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, ETA {eta})"
                }
                (Unit::Entries, None) => "{msg} {human_pos} ({rate})",
                (Unit::Bytes, None) => "{msg} {bytes} ({bytes_per_sec})",
            };
            let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(template) {
                let rate = |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                    let _ = write!(out, "{:.0}/s", state.per_sec());
                };
                bar.set_style(style.with_key("rate", rate).progress_chars("=> "));
            }
            bar.set_message(label);
            bar
        });
        Progress {
            label,
            total,
            bar,
            started: now,
            last_line: now,
        }
    }

    /// Says that `done` units are done so far. O(1); writes at most one line per
    /// [`LINE_EVERY`] off a terminal.
    pub(super) fn update(&mut self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
            return;
        }
        let now = Instant::now();
        if now.duration_since(self.last_line) < LINE_EVERY {
            return;
        }
        self.last_line = now;
        let rate = done as f64 / now.duration_since(self.started).as_secs_f64().max(1e-9);
        match self.total {
            Some(total) if total > 0 => tracing::info!(
                done,
                total,
                percent = (done.min(total) * 100 / total),
                rate = rate.round() as u64,
                "{}",
                self.label
            ),
            _ => tracing::info!(done, rate = rate.round() as u64, "{}", self.label),
        }
    }

    /// Starts over at 0 with a new label: a second pass over the same input.
    pub(super) fn restart(&mut self, label: &'static str) {
        self.label = label;
        self.started = Instant::now();
        if let Some(bar) = &self.bar {
            bar.set_message(label);
            bar.reset();
        }
    }

    /// Removes the bar; the command reports its totals itself.
    pub(super) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
