//! Latency summaries: exact percentiles over every sample (a run has at most a few
//! hundred thousand, so sorting beats a histogram's approximation).

use std::time::Duration;

/// Percentiles of one latency, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Summary {
    pub count: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
}

impl Summary {
    /// Summarizes `samples` (any order); all zero when empty.
    pub fn of(samples: &[Duration]) -> Summary {
        if samples.is_empty() {
            return Summary::default();
        }
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        ms.sort_by(|a, b| a.total_cmp(b));
        let at = |q: f64| ms[((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1];
        Summary {
            count: ms.len(),
            p50_ms: at(0.50),
            p95_ms: at(0.95),
            p99_ms: at(0.99),
            max_ms: ms[ms.len() - 1],
            mean_ms: ms.iter().sum::<f64>() / ms.len() as f64,
        }
    }

    /// `p50 / p95 / p99 / max` for a table cell.
    pub fn cell(&self) -> String {
        if self.count == 0 {
            return "-".into();
        }
        format!(
            "{:.2} / {:.2} / {:.2} / {:.2} ms",
            self.p50_ms, self.p95_ms, self.p99_ms, self.max_ms
        )
    }
}

/// Best, worst and all values of a figure measured several times.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Repeated {
    pub best: f64,
    pub worst: f64,
    pub runs: Vec<f64>,
}

impl Repeated {
    /// `higher_is_better` decides which end is "best".
    pub fn of(runs: Vec<f64>, higher_is_better: bool) -> Repeated {
        let max = runs.iter().copied().fold(f64::MIN, f64::max);
        let min = runs.iter().copied().fold(f64::MAX, f64::min);
        let (best, worst) = if higher_is_better {
            (max, min)
        } else {
            (min, max)
        };
        Repeated { best, worst, runs }
    }

    /// The middle run (the mean of the two middle ones for an even count); 0 for none.
    pub fn median(&self) -> f64 {
        let mut runs = self.runs.clone();
        runs.sort_by(|a, b| a.total_cmp(b));
        match runs.len() {
            0 => 0.0,
            n if n % 2 == 1 => runs[n / 2],
            n => (runs[n / 2 - 1] + runs[n / 2]) / 2.0,
        }
    }

    /// The spread as a share of the best value.
    pub fn spread(&self) -> f64 {
        if self.best == 0.0 {
            0.0
        } else {
            ((self.best - self.worst) / self.best).abs()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_run() {
        assert_eq!(Repeated::of(vec![3.0, 1.0, 2.0], true).median(), 2.0);
        assert_eq!(Repeated::of(vec![4.0, 1.0, 2.0, 3.0], false).median(), 2.5);
        assert_eq!(Repeated::of(Vec::new(), true).median(), 0.0);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let s = Summary::of(&samples);
        assert_eq!(
            (s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms),
            (50.0, 95.0, 99.0, 100.0)
        );
        assert_eq!(Summary::of(&[]).count, 0);
        let one = Summary::of(&[Duration::from_millis(7)]);
        assert_eq!((one.p50_ms, one.p99_ms), (7.0, 7.0));
    }

    #[test]
    fn repeated_knows_which_end_is_best() {
        let r = Repeated::of(vec![10.0, 8.0, 9.0], true);
        assert_eq!((r.best, r.worst), (10.0, 8.0));
        assert!((r.spread() - 0.2).abs() < 1e-9);
        let r = Repeated::of(vec![3.0, 2.0], false);
        assert_eq!((r.best, r.worst), (2.0, 3.0));
    }
}
