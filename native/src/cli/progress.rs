//! The progress bar of `fusegraph bench`: cases done out of the suite's
//! total, the case running now, and the elapsed time. It is drawn on
//! stderr only when stderr is a terminal (a log file or CI gets the plain
//! per-case lines and nothing else), and each case's result line is
//! printed above the bar.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar for `total` steps of suite `suite`.
    pub fn new(suite: &str, total: usize) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
        // The template is a constant; should it ever fail to parse, the
        // default style still shows the count.
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} {elapsed_precise} {wide_msg}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(format!("bench {suite}"));
        Progress { bar }
    }

    /// Shows the step starting now.
    pub fn start(&self, step: &str) {
        self.bar.set_message(step.to_string());
    }

    /// Prints a result line above the bar (or alone, without a terminal).
    pub fn line(&self, text: &str) {
        self.bar.suspend(|| eprintln!("{text}"));
    }

    /// Runs a step that prints its own lines (with `eprintln!`), with the
    /// bar out of the way, then counts it done (the CUDA suite's tables).
    #[cfg(feature = "cuda")]
    pub fn around<T>(&self, step: impl FnOnce() -> T) -> T {
        let out = self.bar.suspend(step);
        self.done();
        out
    }

    /// One step done.
    pub fn done(&self) {
        self.bar.inc(1);
    }

    /// Removes the bar once the suite is over.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
