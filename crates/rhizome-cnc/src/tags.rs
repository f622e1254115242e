//! Tag (control) collections and the step collections they prescribe.
//!
//! A put of a tag starts one instance of every prescribed step collection with that tag,
//! on the step collection's home PE for the tag: a job of the PE's scheduler there (a
//! closure job when the home is this PE, a [`Wire`](crate::graph) job otherwise). An
//! instance that suspends on a missing input is started again from the beginning when the
//! input arrives; its puts are held back until it completes, so a suspended run leaves no
//! trace and the restart cannot put twice.

use crate::Tag;
use crate::graph::{Collection, GraphShared, Kind, decode, encode};
use crate::items::Waiter;
use crate::step::{StepCtx, StepResult};
use rhizome::tasks::TaskCtx;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};

/// The body of a step collection.
pub(crate) type StepBody<T> = Box<dyn Fn(&mut StepCtx, &T) -> StepResult + Send + Sync>;

/// The state of a step collection on one PE.
pub(crate) struct Steps<T> {
    id: u32,
    name: String,
    home: Box<dyn Fn(&T) -> usize + Send + Sync>,
    body: StepBody<T>,
    graph: Arc<GraphShared>,
}

/// A collection of step instances, one per tag put into a tag collection that
/// [prescribes](TagCollection::prescribes) it. Create it with
/// [`Graph::steps`](crate::Graph::steps) on every PE. Cheap to clone.
pub struct StepCollection<T> {
    inner: Arc<Steps<T>>,
}

impl<T> Clone for StepCollection<T> {
    fn clone(&self) -> Self {
        StepCollection {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T: Tag> StepCollection<T> {
    pub(crate) fn new(
        graph: &Arc<GraphShared>,
        name: &str,
        home: Box<dyn Fn(&T) -> usize + Send + Sync>,
        body: StepBody<T>,
    ) -> Self {
        let inner = Arc::new(Steps {
            id: graph.next_id(),
            name: name.to_string(),
            home,
            body,
            graph: Arc::clone(graph),
        });
        graph.add(Arc::clone(&inner) as Arc<dyn Collection>);
        StepCollection { inner }
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }
}

impl<T: Tag> Steps<T> {
    /// Starts the instance of `tag` on its home PE.
    fn prescribe(self: &Arc<Self>, t: &TaskCtx, tag: T) {
        let home = (self.home)(&tag) % self.graph.pes();
        if home == self.graph.pe() {
            self.spawn_here(t, tag);
        } else {
            self.graph
                .send(t, home, self.id, Kind::Step, encode(&tag), Vec::new());
        }
    }

    /// Queues the instance of `tag` as a job of this PE (any of its workers runs it).
    fn spawn_here(self: &Arc<Self>, t: &TaskCtx, tag: T) {
        let me = Arc::clone(self);
        drop(t.spawn_local(move |t| me.execute(t, &tag)));
    }

    /// Runs the instance of `tag` now, on this worker.
    fn execute(self: &Arc<Self>, t: &TaskCtx, tag: &T) {
        let again = || {
            let me = Arc::clone(self);
            let tag2 = tag.clone();
            Waiter {
                what: format!("step `{}` tag {:?}", self.name, tag),
                resume: Box::new(move |t: &TaskCtx| me.spawn_here(t, tag2)),
            }
        };
        let mut s = StepCtx::new(t, &again);
        match catch_unwind(AssertUnwindSafe(|| (self.body)(&mut s, tag))) {
            Ok(r) => s.finish(r.is_ok()),
            Err(p) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(no message)".into());
                self.graph.step_failed(format!(
                    "step `{}` tag {:?} panicked: {msg}",
                    self.name, tag
                ));
            }
        }
    }
}

impl<T: Tag> Collection for Steps<T> {
    fn receive(self: Arc<Self>, t: &TaskCtx, kind: Kind, tag: &[u8], _: &[u8]) {
        match kind {
            Kind::Step => self.execute(t, &decode(tag)),
            _ => unreachable!(
                "rhizome-cnc: an item job sent to step collection `{}`",
                self.name
            ),
        }
    }

    fn take_unsatisfied(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A tag (control) collection: putting a tag prescribes (starts) one instance of every
/// step collection this collection prescribes. Create it with
/// [`Graph::tags`](crate::Graph::tags). Cheap to clone.
pub struct TagCollection<T> {
    inner: Arc<Tags<T>>,
}

struct Tags<T> {
    name: String,
    prescribed: Mutex<Vec<Arc<Steps<T>>>>,
}

impl<T> Clone for TagCollection<T> {
    fn clone(&self) -> Self {
        TagCollection {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T: Tag> TagCollection<T> {
    pub(crate) fn new(name: &str) -> Self {
        TagCollection {
            inner: Arc::new(Tags {
                name: name.to_string(),
                prescribed: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// From now on every tag put here also starts an instance of `steps`. Call it on
    /// every PE, before [`Graph::run`](crate::Graph::run).
    pub fn prescribes(&self, steps: &StepCollection<T>) -> &Self {
        self.inner
            .prescribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::clone(&steps.inner));
        self
    }

    /// Starts the instances `tag` prescribes.
    pub(crate) fn put(&self, t: &TaskCtx, tag: T) {
        let steps = self
            .inner
            .prescribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for s in steps {
            s.prescribe(t, tag.clone());
        }
    }
}
