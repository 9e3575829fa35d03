//! Compaction debt over time: a sampler thread reads an engine's L0 file count and pending
//! compaction bytes (and cairn's stall and delay time and write memory, the process's resident
//! memory and what cairn accounts for) while a benchmark runs, for the
//! `timeline` of `--json` and the charts of `plot_timeline`.

use crate::engine::Engine;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use crate::engine::Debt;

/// One sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the runner started.
    pub t_secs: f64,
    /// The phase running.
    pub phase: String,
    /// The debt.
    pub debt: Debt,
    /// The process's resident memory then (VmRSS).
    #[serde(default)]
    pub rss_bytes: u64,
    /// What the engine accounts for then (cairn: `MemoryUsage::total_usage`).
    #[serde(default)]
    pub accounted_bytes: Option<u64>,
    /// Its write memory then (cairn: the memory tuner's write region).
    #[serde(default)]
    pub write_memory_bytes: Option<u64>,
}

/// Runs `f` while a thread samples `engine`'s debt every `every`, labelling each sample with
/// the phase `phase` names at that moment. Engines that report no debt give no samples.
pub fn sampled<T>(
    engine: &dyn Engine,
    every: Duration,
    phase: &Mutex<String>,
    f: impl FnOnce() -> T,
) -> (T, Vec<Sample>) {
    let start = Instant::now();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut out = Vec::new();
            while let Some(debt) = engine.debt() {
                let name = phase.lock().map(|p| p.clone()).unwrap_or_default();
                out.push(Sample {
                    t_secs: start.elapsed().as_secs_f64(),
                    phase: name,
                    debt,
                    rss_bytes: crate::rss_bytes("VmRSS").unwrap_or(0),
                    accounted_bytes: engine.as_cairn().map(|db| db.memory().total_usage() as u64),
                    write_memory_bytes: engine.as_cairn().map(|db| db.memory().write_capacity as u64),
                });
                // Sleep in short steps so the end of the run is not delayed by a full period.
                let next = Instant::now() + every;
                while Instant::now() < next {
                    if done.load(Ordering::Acquire) {
                        return out;
                    }
                    std::thread::sleep(Duration::from_millis(10).min(every));
                }
            }
            out
        });
        let r = f();
        done.store(true, Ordering::Release);
        let samples = sampler.join().unwrap_or_default();
        (r, samples)
    })
}
