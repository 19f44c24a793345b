//! Natural batching without a timer: take what is queued, and let the runtime run what
//! is ready for as long as that adds more.
//!
//! Work that starts together tends to end together: the attempts of one claim, the
//! requests of many clients answered by one round trip. Their completions or submits
//! reach a queue microseconds apart, each from its own task. Taking only what is already
//! queued sent the first alone and split the rest over the next statements; a yield to
//! the runtime first lets those tasks run and queue theirs, so they share one statement.
//! A yield with nothing else ready returns at once, so a lone item waits for no clock.
//!
//! What a yield lets run is what was ready: on the multi-threaded runtime a task woken
//! by I/O during it may run after the gatherer, and a trickle of an item or two a yield
//! stops gathering after [`MAX_YIELDS`] (the flush then goes; what comes later rides
//! the next one).

use tokio::sync::mpsc;

/// A queue to take items from without waiting: either kind of tokio mpsc receiver.
pub trait Queue<T> {
    /// The next item if one is queued now.
    fn try_take(&mut self) -> Option<T>;
}

impl<T> Queue<T> for mpsc::UnboundedReceiver<T> {
    fn try_take(&mut self) -> Option<T> {
        self.try_recv().ok()
    }
}

impl<T> Queue<T> for mpsc::Receiver<T> {
    fn try_take(&mut self) -> Option<T> {
        self.try_recv().ok()
    }
}

/// Most yields one gathering makes. Each can last a pass over the runtime's ready
/// tasks, and a steady trickle adding an item or two a yield would otherwise hold the
/// batch (and the slots of the attempts waiting on it) for up to `max` passes.
pub const MAX_YIELDS: usize = 4;

/// Moves into `batch`, up to `max` in all, what `queue` holds now, then yields to the
/// runtime and takes more, until a yield adds nothing, `batch` is full or
/// [`MAX_YIELDS`] yields are made.
pub async fn ready<T>(queue: &mut impl Queue<T>, batch: &mut Vec<T>, max: usize) {
    take(queue, batch, max);
    for _ in 0..MAX_YIELDS {
        if batch.len() >= max {
            return;
        }
        tokio::task::yield_now().await;
        let before = batch.len();
        take(queue, batch, max);
        if batch.len() == before {
            return;
        }
    }
}

/// Moves into `batch`, up to `max` in all, what `queue` holds now.
fn take<T>(queue: &mut impl Queue<T>, batch: &mut Vec<T>, max: usize) {
    while batch.len() < max {
        match queue.try_take() {
            Some(item) => batch.push(item),
            None => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn items_queued_by_tasks_ready_to_run_join_the_batch() {
        let (sender, mut queue) = mpsc::unbounded_channel();
        sender.send(0).unwrap();
        let mut batch = vec![queue.recv().await.unwrap()];
        // Ready to run, not yet run: each queues one item when the runtime polls it.
        for n in 1..=5 {
            let sender = sender.clone();
            tokio::spawn(async move { sender.send(n).unwrap() });
        }
        ready(&mut queue, &mut batch, 64).await;
        batch.sort();
        assert_eq!(batch, vec![0, 1, 2, 3, 4, 5]);
    }

    #[tokio::test]
    async fn a_full_batch_takes_no_more() {
        let (sender, mut queue) = mpsc::unbounded_channel();
        for n in 0..10 {
            sender.send(n).unwrap();
        }
        let mut batch = Vec::new();
        ready(&mut queue, &mut batch, 4).await;
        assert_eq!(batch, vec![0, 1, 2, 3]);
        assert_eq!(queue.try_recv().unwrap(), 4);
    }

    // The clock is paused and moves only when every task waits on a timer: a gathering
    // that held the batch on one would move it.
    #[tokio::test(start_paused = true)]
    async fn a_lone_item_is_not_held() {
        let (sender, mut queue) = mpsc::unbounded_channel::<u32>();
        sender.send(7).unwrap();
        let mut batch = vec![queue.recv().await.unwrap()];
        let before = tokio::time::Instant::now();
        ready(&mut queue, &mut batch, 64).await;
        assert_eq!(batch, vec![7]);
        assert_eq!(tokio::time::Instant::now(), before, "no time passed");
    }

    #[tokio::test]
    async fn a_trickle_stops_gathering_after_the_last_yield() {
        let (sender, mut queue) = mpsc::unbounded_channel();
        sender.send(0).unwrap();
        let mut batch = vec![queue.recv().await.unwrap()];
        // A chain of tasks, each queueing one item and waking the next only after the
        // gatherer's yield: one item a yield, for longer than it gathers.
        fn link(sender: mpsc::UnboundedSender<usize>, n: usize) {
            if n > 20 {
                return;
            }
            tokio::spawn(async move {
                sender.send(n).unwrap();
                tokio::task::yield_now().await;
                link(sender, n + 1);
            });
        }
        link(sender, 1);
        ready(&mut queue, &mut batch, 64).await;
        // The first item, then one a yield up to the last yield, and not the next link.
        let gathered: Vec<usize> = (0..=MAX_YIELDS).collect();
        assert_eq!(batch, gathered);
    }
}
