//! The claims' floors (`tasklane.turn_floors`): where each task type and priority's
//! claims start reading the claimable index. Raised to where the claims have got by
//! the maintenance role (`maintenance::floors`) in two steps: [`read`] the points and
//! the writers in flight, then, once those writers are gone, [`raise`] the floors to
//! the points read (see `sql/floors_read.sql` and `sql/floors_raise.sql`).

use tokio_postgres::Client;

use super::{DbError, Statements};

/// One floor as [`read`] found it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub task_type: String,
    pub priority: i16,
    pub floor: f64,
    /// Where the claims had got.
    pub point: f64,
    /// The writers of claimable rows of this type and priority in flight (their virtual
    /// transaction ids).
    pub writers: Vec<String>,
}

/// A floor to raise, and to which turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub task_type: String,
    pub priority: i16,
    pub turn: f64,
}

/// What one raise did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Raised {
    /// Floors raised.
    pub floors: i64,
    /// Claimable tasks the claims had passed, marked behind.
    pub behind: i64,
}

/// Every floor, with its point and its writers in flight.
pub async fn read(client: &Client) -> Result<Vec<Reading>, DbError> {
    let rows = client
        .rows(include_str!("../../sql/floors_read.sql"), &[])
        .await?;
    rows.iter()
        .map(|row| {
            Ok(Reading {
                task_type: row.try_get("task_type")?,
                priority: row.try_get("priority")?,
                floor: row.try_get("floor")?,
                point: row.try_get("point")?,
                writers: row.try_get("writers")?,
            })
        })
        .collect()
}

/// The floors of an earlier reading that may now rise to the points it read: those
/// still below that point now, none of whose writers then is still in flight. A floor
/// the later reading does not list has no point any more (dropped with its type):
/// left alone.
pub fn ready(earlier: &[Reading], now: &[Reading]) -> Vec<Target> {
    earlier
        .iter()
        .filter_map(|before| {
            let later = now
                .iter()
                .find(|r| r.task_type == before.task_type && r.priority == before.priority)?;
            let finished = !before.writers.iter().any(|w| later.writers.contains(w));
            (finished && later.floor < before.point).then(|| Target {
                task_type: before.task_type.clone(),
                priority: before.priority,
                turn: before.point,
            })
        })
        .collect()
}

/// Raises the floors to their targets, in one transaction.
pub async fn raise(client: &mut Client, targets: &[Target]) -> Result<Raised, DbError> {
    if targets.is_empty() {
        return Ok(Raised::default());
    }
    let types: Vec<&str> = targets.iter().map(|t| t.task_type.as_str()).collect();
    let priorities: Vec<i16> = targets.iter().map(|t| t.priority).collect();
    let turns: Vec<f64> = targets.iter().map(|t| t.turn).collect();
    let tx = client.transaction().await?;
    let row = tx
        .row(
            include_str!("../../sql/floors_raise.sql"),
            &[&types, &priorities, &turns],
        )
        .await?;
    let raised = Raised {
        floors: row.try_get("raised")?,
        behind: row.try_get("marked")?,
    };
    tx.commit().await?;
    Ok(raised)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(floor: f64, point: f64, writers: &[&str]) -> Reading {
        Reading {
            task_type: "noop".into(),
            priority: 0,
            floor,
            point,
            writers: writers.iter().map(|w| w.to_string()).collect(),
        }
    }

    #[test]
    fn a_floor_rises_to_the_point_read_once_its_writers_then_are_gone() {
        let targets = ready(
            &[reading(10.0, 50.0, &["3/7"])],
            &[reading(10.0, 90.0, &["4/2"])],
        );
        assert_eq!(
            targets,
            vec![Target {
                task_type: "noop".into(),
                priority: 0,
                turn: 50.0
            }]
        );
    }

    #[test]
    fn a_writer_in_flight_at_the_reading_holds_its_floor() {
        let earlier = [reading(10.0, 50.0, &["3/7", "4/2"])];
        assert!(ready(&earlier, &[reading(10.0, 90.0, &["4/2"])]).is_empty());
    }

    #[test]
    fn floors_at_their_point_or_already_past_it_or_gone_are_left() {
        assert!(ready(&[reading(50.0, 50.0, &[])], &[reading(50.0, 60.0, &[])]).is_empty());
        assert!(ready(&[reading(10.0, 50.0, &[])], &[reading(55.0, 60.0, &[])]).is_empty());
        assert!(ready(&[reading(10.0, 50.0, &[])], &[]).is_empty());
    }
}
