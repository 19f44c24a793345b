//! The age of the oldest holder of the vacuum horizon, for the gauge
//! `tasklane.oldest_snapshot_age`. PostgreSQL dates most holders (a backend's open
//! transaction, a prepared transaction) but not all: a replication slot's xmin, a
//! standby's feedback on its walsender, or another role's transaction when the sampler
//! may not read its `xact_start`. Those are dated here, from the first sample that saw
//! the holder at that transaction id: a holder whose xmin keeps moving (a healthy
//! standby) stays young, one stuck at an xid ages sample by sample. That age is a lower
//! bound (it starts when this sampler first saw it), which is what an alert needs.

use std::collections::HashMap;
use std::time::Instant;

use crate::store::health_sample::HorizonHolder;

/// When each undated holder was first seen at its current xmin.
#[derive(Debug, Default)]
pub struct HorizonAges {
    first_seen: HashMap<(String, String), Instant>,
}

impl HorizonAges {
    /// The oldest holder's age in seconds at `now` (0 when nothing holds the horizon),
    /// remembering undated holders for the next sample and forgetting those gone.
    pub fn oldest(&mut self, holders: &[HorizonHolder], now: Instant) -> f64 {
        let mut seen = HashMap::new();
        let mut oldest: f64 = 0.0;
        for holder in holders {
            let age = match holder.seconds {
                Some(seconds) => seconds,
                None => {
                    let key = (holder.holder.clone(), holder.xmin.clone());
                    let since = self.first_seen.get(&key).copied().unwrap_or(now);
                    seen.insert(key, since);
                    now.saturating_duration_since(since).as_secs_f64()
                }
            };
            oldest = oldest.max(age);
        }
        self.first_seen = seen;
        oldest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn holder(name: &str, xmin: &str, seconds: Option<f64>) -> HorizonHolder {
        HorizonHolder {
            holder: name.to_owned(),
            xmin: xmin.to_owned(),
            seconds,
        }
    }

    #[test]
    fn dated_holders_give_their_own_age() {
        let mut ages = HorizonAges::default();
        let holders = [
            holder("backend 7", "900", Some(42.5)),
            holder("backend 8", "901", Some(3.0)),
        ];
        assert_eq!(ages.oldest(&holders, Instant::now()), 42.5);
        assert_eq!(ages.oldest(&[], Instant::now()), 0.0);
    }

    #[test]
    fn an_undated_holder_ages_while_its_xmin_stays() {
        let mut ages = HorizonAges::default();
        let start = Instant::now();
        let slot = [holder("slot standby", "900", None)];
        assert_eq!(ages.oldest(&slot, start), 0.0);
        let later = start + Duration::from_secs(30);
        assert_eq!(ages.oldest(&slot, later), 30.0);
        // The slot moved on: a new xid is a new holder, young again.
        let moved = [holder("slot standby", "950", None)];
        assert_eq!(ages.oldest(&moved, later + Duration::from_secs(15)), 0.0);
        assert_eq!(ages.oldest(&moved, later + Duration::from_secs(45)), 30.0);
    }

    #[test]
    fn a_holder_gone_is_forgotten() {
        let mut ages = HorizonAges::default();
        let start = Instant::now();
        let slot = [holder("slot a", "900", None)];
        ages.oldest(&slot, start);
        ages.oldest(&[], start + Duration::from_secs(10));
        // Back at the same xid later: dated from its return, not from the first sighting.
        assert_eq!(ages.oldest(&slot, start + Duration::from_secs(20)), 0.0);
    }
}
