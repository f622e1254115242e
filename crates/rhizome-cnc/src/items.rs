//! Item collections: single-assignment maps from tags to items, each item stored on its
//! home PE (the collection's distribution function), with a per-PE cache of items fetched
//! from other PEs.
//!
//! A get that finds nothing does not block: it records the step instance as a waiter in
//! the slot of the tag (and, when the home is another PE, asks the home once for the
//! item). The put, or the arrival of the item from its home, starts every waiter again.
//! Checking for the item and recording the waiter happen under one lock, so a put cannot
//! slip between them.

use crate::graph::{Collection, GraphShared, Kind, decode, encode};
use crate::{Item, Tag};
use rhizome::tasks::TaskCtx;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// A step instance waiting for an item: what to report if the item never comes, and how
/// to start the instance again.
pub(crate) struct Waiter {
    pub(crate) what: String,
    pub(crate) resume: Box<dyn FnOnce(&TaskCtx) + Send>,
}

/// What a PE knows about one tag of a collection.
enum Slot<I> {
    /// The item (owned here, or a copy from its home PE).
    Ready(Arc<I>),
    /// Not there yet: the local step instances waiting for it and, at the home PE, the
    /// PEs that asked for it. A non-home PE creates this slot once and asks the home once.
    Waiting { steps: Vec<Waiter>, pes: Vec<u32> },
}

/// The state of an item collection on one PE.
pub(crate) struct Items<T, I> {
    id: u32,
    name: String,
    home: Box<dyn Fn(&T) -> usize + Send + Sync>,
    graph: Arc<GraphShared>,
    slots: Mutex<HashMap<T, Slot<I>>>,
}

/// A single-assignment collection of items of type `I` indexed by tags of type `T`,
/// spread over the PEs by its distribution function. Cheap to clone (a handle); create it
/// with [`Graph::items`](crate::Graph::items) on every PE.
pub struct ItemCollection<T, I> {
    pub(crate) inner: Arc<Items<T, I>>,
}

impl<T, I> Clone for ItemCollection<T, I> {
    fn clone(&self) -> Self {
        ItemCollection {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T: Tag, I: Item> ItemCollection<T, I> {
    pub(crate) fn new(
        graph: &Arc<GraphShared>,
        name: &str,
        home: Box<dyn Fn(&T) -> usize + Send + Sync>,
    ) -> Self {
        let inner = Arc::new(Items {
            id: graph.next_id(),
            name: name.to_string(),
            home,
            graph: Arc::clone(graph),
            slots: Mutex::new(HashMap::new()),
        });
        graph.add(Arc::clone(&inner) as Arc<dyn Collection>);
        ItemCollection { inner }
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The PE that stores the item of `tag`.
    pub fn home_of(&self, tag: &T) -> usize {
        self.inner.home_of(tag)
    }

    /// The item of `tag` if this PE has it (its home is here, or a step here fetched it),
    /// without waiting. After [`Graph::run`](crate::Graph::run), every item is at its home.
    pub fn get_local(&self, tag: &T) -> Option<Arc<I>> {
        match self.inner.lock().get(tag) {
            Some(Slot::Ready(v)) => Some(Arc::clone(v)),
            _ => None,
        }
    }

    /// The items whose home is this PE, in no particular order.
    pub fn local_items(&self) -> Vec<(T, Arc<I>)> {
        let me = self.inner.graph.pe();
        self.inner
            .lock()
            .iter()
            .filter_map(|(t, s)| match s {
                Slot::Ready(v) if self.inner.home_of(t) == me => Some((t.clone(), Arc::clone(v))),
                _ => None,
            })
            .collect()
    }
}

impl<T: Tag, I: Item> Items<T, I> {
    fn lock(&self) -> MutexGuard<'_, HashMap<T, Slot<I>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn home_of(&self, tag: &T) -> usize {
        (self.home)(tag) % self.graph.pes()
    }

    /// Puts `item` at `tag`: stored here if this is its home, else sent home.
    pub(crate) fn put(&self, t: &TaskCtx, tag: T, item: I) {
        let home = self.home_of(&tag);
        if home == self.graph.pe() {
            self.store(t, tag, Arc::new(item), true);
        } else {
            self.graph
                .send(t, home, self.id, Kind::Put, encode(&tag), encode(&item));
        }
    }

    /// The item of `tag`, or `None` after recording `waiter` (made only then) to be
    /// started when it arrives.
    pub(crate) fn get(
        &self,
        t: &TaskCtx,
        tag: &T,
        waiter: impl FnOnce() -> Waiter,
    ) -> Option<Arc<I>> {
        let mut slots = self.lock();
        match slots.get_mut(tag) {
            Some(Slot::Ready(v)) => return Some(Arc::clone(v)),
            Some(Slot::Waiting { steps, .. }) => {
                steps.push(waiter());
                return None;
            }
            None => {}
        }
        slots.insert(
            tag.clone(),
            Slot::Waiting {
                steps: vec![waiter()],
                pes: Vec::new(),
            },
        );
        drop(slots);
        let home = self.home_of(tag);
        if home != self.graph.pe() {
            let from = self.graph.pe() as u32;
            self.graph.send(
                t,
                home,
                self.id,
                Kind::Want { from },
                encode(tag),
                Vec::new(),
            );
        }
        None
    }

    /// Stores an item here (`owned`: a put at its home; else a copy from the home) and
    /// starts whoever waited for it. A second put at one tag is recorded as an error.
    fn store(&self, t: &TaskCtx, tag: T, item: Arc<I>, owned: bool) {
        let mut slots = self.lock();
        let (steps, pes) = match slots.entry(tag) {
            Entry::Vacant(e) => {
                e.insert(Slot::Ready(item));
                return;
            }
            Entry::Occupied(mut e) => match e.get() {
                Slot::Ready(_) => {
                    if owned {
                        let line = format!("`{}` tag {:?}", self.name, e.key());
                        drop(slots);
                        self.graph.double_put(line);
                    }
                    return;
                }
                Slot::Waiting { .. } => {
                    let tag = e.key().clone();
                    match std::mem::replace(e.get_mut(), Slot::Ready(Arc::clone(&item))) {
                        Slot::Waiting { steps, pes } => (steps, (pes, tag)),
                        Slot::Ready(_) => unreachable!("matched as waiting above"),
                    }
                }
            },
        };
        drop(slots);
        let (pes, tag) = pes;
        if !pes.is_empty() {
            let (tag, item) = (encode(&tag), encode(&*item));
            for pe in pes {
                self.graph.send(
                    t,
                    pe as usize,
                    self.id,
                    Kind::Deliver,
                    tag.clone(),
                    item.clone(),
                );
            }
        }
        for w in steps {
            (w.resume)(t);
        }
    }

    /// At the home: PE `from` wants the item of `tag`.
    fn want(&self, t: &TaskCtx, tag: T, from: u32) {
        let mut slots = self.lock();
        let item = match slots.entry(tag) {
            Entry::Occupied(mut e) => {
                let tag = encode(e.key());
                match e.get_mut() {
                    Slot::Ready(v) => Some((tag, encode(&**v))),
                    Slot::Waiting { pes, .. } => {
                        pes.push(from);
                        None
                    }
                }
            }
            Entry::Vacant(e) => {
                e.insert(Slot::Waiting {
                    steps: Vec::new(),
                    pes: vec![from],
                });
                None
            }
        };
        drop(slots);
        if let Some((tag, item)) = item {
            self.graph
                .send(t, from as usize, self.id, Kind::Deliver, tag, item);
        }
    }
}

impl<T: Tag, I: Item> Collection for Items<T, I> {
    fn receive(self: Arc<Self>, t: &TaskCtx, kind: Kind, tag: &[u8], item: &[u8]) {
        let tag: T = decode(tag);
        match kind {
            Kind::Put => self.store(t, tag, Arc::new(decode(item)), true),
            Kind::Deliver => self.store(t, tag, Arc::new(decode(item)), false),
            Kind::Want { from } => self.want(t, tag, from),
            Kind::Step => unreachable!(
                "rhizome-cnc: a step job sent to item collection `{}`",
                self.name
            ),
        }
    }

    fn take_unsatisfied(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.lock().retain(|tag, slot| match slot {
            Slot::Ready(_) => true,
            Slot::Waiting { steps, .. } => {
                for w in steps.iter() {
                    out.push(format!(
                        "`{}` tag {:?} (wanted by {})",
                        self.name, tag, w.what
                    ));
                }
                false
            }
        });
        out
    }
}
