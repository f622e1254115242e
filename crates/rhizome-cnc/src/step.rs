//! What a step and the environment see: gets that suspend instead of blocking, and puts
//! (held back in a step until it completes; immediate in the environment).

use crate::items::{ItemCollection, Waiter};
use crate::tags::TagCollection;
use crate::{Item, Tag};
use rhizome::tasks::TaskCtx;
use std::sync::Arc;

/// A get found no item: the step instance is suspended and will be started again when
/// the item is put. Return it from the step (`?` does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unavailable;

/// What a step body returns: `Ok(())` when it ran to the end, `Err(Unavailable)` when an
/// input was missing.
pub type StepResult = Result<(), Unavailable>;

/// A put held back until the step completes.
type Deferred<'a> = Box<dyn FnOnce(&TaskCtx) + Send + 'a>;

/// The context of one run of a step instance.
pub struct StepCtx<'a> {
    t: &'a TaskCtx,
    again: &'a dyn Fn() -> Waiter,
    suspended: bool,
    puts: Vec<Deferred<'static>>,
}

impl<'a> StepCtx<'a> {
    pub(crate) fn new(t: &'a TaskCtx, again: &'a dyn Fn() -> Waiter) -> Self {
        StepCtx {
            t,
            again,
            suspended: false,
            puts: Vec::new(),
        }
    }

    /// The item of `tag`, or `Err(Unavailable)` if it is not there yet: then this
    /// instance is suspended (started again from the beginning once the item is put, or
    /// reported by [`Graph::run`](crate::Graph::run) if it never is). After one missing
    /// input every further get of this run fails too.
    pub fn get<T: Tag, I: Item>(
        &mut self,
        items: &ItemCollection<T, I>,
        tag: &T,
    ) -> Result<Arc<I>, Unavailable> {
        if self.suspended {
            return Err(Unavailable);
        }
        let again = self.again;
        match items.inner.get(self.t, tag, again) {
            Some(v) => Ok(v),
            None => {
                self.suspended = true;
                Err(Unavailable)
            }
        }
    }

    /// Puts `item` at `tag` when this run completes (not if it suspends). A tag put
    /// twice, by any steps or the environment, is an error of the graph's run.
    pub fn put<T: Tag, I: Item>(&mut self, items: &ItemCollection<T, I>, tag: T, item: I) {
        let items = items.clone();
        self.puts
            .push(Box::new(move |t: &TaskCtx| items.inner.put(t, tag, item)));
    }

    /// Puts `tag` into a tag collection (starting the steps it prescribes) when this run
    /// completes.
    pub fn put_tag<T: Tag>(&mut self, tags: &TagCollection<T>, tag: T) {
        let tags = tags.clone();
        self.puts
            .push(Box::new(move |t: &TaskCtx| tags.put(t, tag)));
    }

    /// The scheduler context of the worker running this step: its PE, and fork-join
    /// inside the step ([`TaskCtx::join`]).
    pub fn task(&self) -> &TaskCtx {
        self.t
    }

    /// This PE's number.
    pub fn my_pe(&self) -> usize {
        self.t.my_pe()
    }

    /// Number of PEs.
    pub fn num_pes(&self) -> usize {
        self.t.num_pes()
    }

    /// Ends the run: its puts take effect if it completed.
    pub(crate) fn finish(self, completed: bool) {
        if completed && !self.suspended {
            for p in self.puts {
                p(self.t);
            }
        }
    }
}

/// The environment: the body of [`Graph::run`](crate::Graph::run) on each PE, which puts
/// the graph's inputs. Its puts take effect at once.
pub struct Env<'a> {
    t: &'a TaskCtx,
}

impl<'a> Env<'a> {
    pub(crate) fn new(t: &'a TaskCtx) -> Self {
        Env { t }
    }

    /// Puts `item` at `tag` (sent to the tag's home PE).
    pub fn put<T: Tag, I: Item>(&self, items: &ItemCollection<T, I>, tag: T, item: I) {
        items.inner.put(self.t, tag, item);
    }

    /// Puts `tag`, starting the step instances it prescribes.
    pub fn put_tag<T: Tag>(&self, tags: &TagCollection<T>, tag: T) {
        tags.put(self.t, tag);
    }

    /// This PE's number.
    pub fn my_pe(&self) -> usize {
        self.t.my_pe()
    }

    /// Number of PEs.
    pub fn num_pes(&self) -> usize {
        self.t.num_pes()
    }
}
