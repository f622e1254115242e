//! Waiting for several operations of one task at once.
//!
//! A delegate operation, or an `async` operation of a global structure, starts only when
//! polled, so a task that awaits its operations one after the other waits for one round
//! trip (or one combining commit) per operation. [`join_all`] polls them all together:
//! they travel in the same round and the task waits once.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Futures polled together until all have finished.
pub struct JoinAll<F: Future<Output = ()>> {
    pending: Vec<Pin<Box<F>>>,
}

/// Runs all of `futures` concurrently; ready when every one has finished.
pub fn join_all<F: Future<Output = ()>>(futures: impl IntoIterator<Item = F>) -> JoinAll<F> {
    JoinAll {
        pending: futures.into_iter().map(Box::pin).collect(),
    }
}

impl<F: Future<Output = ()>> Future for JoinAll<F> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Each future is boxed, so `JoinAll` is `Unpin` and its vector may be changed.
        self.pending
            .retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if self.pending.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::World;
    use crate::coop::{Coop, yield_now};
    use std::cell::RefCell;

    #[test]
    fn every_future_runs_and_they_interleave() {
        World::builder()
            .pes(1)
            .run(|ctx| {
                let coop = Coop::new(ctx);
                let order = RefCell::new(Vec::new());
                coop.run(|s| {
                    let order = &order;
                    s.spawn(async move {
                        join_all((0..3).map(|i| async move {
                            order.borrow_mut().push((i, 0));
                            yield_now().await;
                            order.borrow_mut().push((i, 1));
                        }))
                        .await;
                    });
                });
                // All three started before any finished: they ran together.
                let order = order.into_inner();
                assert_eq!(order.len(), 6);
                assert_eq!(&order[..3], &[(0, 0), (1, 0), (2, 0)]);
            })
            .unwrap();
    }
}
