//! The mail of the sliced saturation: states sent to their slice's owner as soon as a
//! rank finds them, and the detection of the moment when no rank has work left.
//!
//! A synchronous round (every rank saturates, then all exchange) makes the ranks take
//! turns whenever the states of one slice come from the other: the waiting rank's core
//! idles while the busy one saturates. With mail, a rank sends the states it found for
//! another slice between two steps of its saturation and the owner starts on them at
//! once. No rank then knows by itself that the exploration is over, so termination is
//! detected with Safra's token algorithm (Dijkstra, "Shmuel Safra's version of
//! termination detection", EWD998): every rank counts the state messages it sent minus
//! those it received and turns black when it receives one; a token carries the sum of the
//! counts around the ring (0, N-1, ..., 1, 0), each rank passing it on only when idle;
//! when it comes back to rank 0 white, with rank 0 white and idle and the sum zero, no
//! message is in flight and every rank is idle, and rank 0 tells every rank to stop.
//! Hand-written because the runtime's termination detection (`Ctx::finish`) is a blocking
//! collective: a rank waiting in it could not start on states mailed to it meanwhile.

use rhizome::backoff::Backoff;
use rhizome::{Am, Ctx};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// How an idle rank waits: it naps after some thousands of yields, so that a rank idle
/// while another saturates stops burning a core in `sched_yield` (as the runtime's
/// collectives wait).
const IDLE_WAIT: Backoff = Backoff::with_nap(64, 4096, Duration::from_micros(50));

/// What travels: (kind, the token's count, encoded states).
type Letter = (u8, i64, Vec<u8>);

const STATES: u8 = 0;
const TOKEN_WHITE: u8 = 1;
const TOKEN_BLACK: u8 = 2;
const STOP: u8 = 3;
const FAILED: u8 = 4;

/// What the handler leaves for the rank's main loop.
#[derive(Default)]
struct Inbox {
    /// Encoded states received and not yet taken.
    states: Vec<Vec<u8>>,
    /// This rank's part of the termination detection.
    safra: Safra,
    /// The token, while this rank holds it.
    token: Option<Token>,
    stop: bool,
    peer_failed: bool,
}

/// One rank's mailbox, opened by every rank at the same point of the run.
pub(super) struct Mail {
    am: Am<Letter>,
    inbox: Rc<RefCell<Inbox>>,
    me: usize,
    pes: usize,
    /// Rank 0: a probe is under way (the token is out).
    probing: bool,
}

/// Why a rank stopped waiting.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Woken {
    /// States arrived.
    States,
    /// Every rank is idle and no states are in flight: the exploration is over.
    Stop,
    /// Another rank failed.
    PeerFailed,
}

impl Mail {
    /// Opens the mailbox. Collective: every rank registers its handler in the same
    /// order, and none sends before all have (a barrier).
    pub(super) fn open(ctx: &Ctx) -> Mail {
        let inbox = Rc::new(RefCell::new(Inbox::default()));
        let held = inbox.clone();
        let am = ctx.register(move |_: &Ctx, (kind, q, bytes): Letter| {
            let mut b = held.borrow_mut();
            match kind {
                STATES => {
                    b.states.push(bytes);
                    b.safra.received();
                }
                TOKEN_WHITE | TOKEN_BLACK => {
                    b.token = Some(Token {
                        count: q,
                        black: kind == TOKEN_BLACK,
                    })
                }
                STOP => b.stop = true,
                _ => b.peer_failed = true,
            }
        });
        ctx.barrier();
        Mail {
            am,
            inbox,
            me: ctx.my_pe(),
            pes: ctx.num_pes(),
            probing: false,
        }
    }

    /// Sends `bytes` (encoded states) to rank `to`, now.
    pub(super) fn send_states(&self, ctx: &Ctx, to: usize, bytes: Vec<u8>) {
        self.inbox.borrow_mut().safra.sent();
        ctx.send(to, self.am, &(STATES, 0, bytes));
        ctx.flush();
    }

    /// The states received since the last call (after handling what has arrived).
    pub(super) fn take_states(&self, ctx: &Ctx) -> Vec<Vec<u8>> {
        ctx.progress();
        std::mem::take(&mut self.inbox.borrow_mut().states)
    }

    /// Whether states have arrived (after handling what has arrived).
    pub(super) fn has_states(&self, ctx: &Ctx) -> bool {
        ctx.progress();
        !self.inbox.borrow().states.is_empty()
    }

    /// Tells every other rank that this one failed: they stop at their next look at the
    /// mail.
    pub(super) fn fail(&self, ctx: &Ctx) {
        for pe in (0..self.pes).filter(|&p| p != self.me) {
            ctx.send(pe, self.am, &(FAILED, 0, Vec::new()));
        }
        ctx.flush();
    }

    /// Whether another rank failed (as of the last handled message).
    pub(super) fn peer_failed(&self) -> bool {
        self.inbox.borrow().peer_failed
    }

    /// Waits, idle (this rank has saturated and sent everything it found), until states
    /// arrive, every rank is idle, or a rank failed; takes part in the termination
    /// detection meanwhile.
    pub(super) fn wait(&mut self, ctx: &Ctx) -> Woken {
        let mut backoff = IDLE_WAIT;
        loop {
            let handled = ctx.progress();
            let mut b = self.inbox.borrow_mut();
            if b.peer_failed {
                return Woken::PeerFailed;
            }
            if b.stop {
                return Woken::Stop;
            }
            if !b.states.is_empty() {
                return Woken::States;
            }
            let mut sent = false;
            if self.me == 0 {
                if let Some(token) = b.token.take() {
                    self.probing = false;
                    if b.safra.probe_proves_the_end(token) {
                        b.stop = true;
                        drop(b);
                        for pe in 1..self.pes {
                            ctx.send(pe, self.am, &(STOP, 0, Vec::new()));
                        }
                        ctx.flush();
                        return Woken::Stop;
                    }
                }
                if !self.probing {
                    self.probing = true;
                    let token = b.safra.start_probe();
                    drop(b);
                    ctx.send(self.pes - 1, self.am, &token.letter());
                    sent = true;
                }
            } else if let Some(token) = b.token.take() {
                let token = b.safra.pass(token);
                drop(b);
                ctx.send(self.me - 1, self.am, &token.letter());
                sent = true;
            }
            if sent {
                ctx.flush();
                backoff.reset();
            } else if handled > 0 {
                backoff.reset();
            } else {
                backoff.snooze();
            }
        }
    }
}

/// The token of Safra's algorithm: the sum of the counts of the ranks it has visited in
/// this probe, and whether one of them was black.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Token {
    count: i64,
    black: bool,
}

impl Token {
    fn letter(self) -> Letter {
        let kind = if self.black { TOKEN_BLACK } else { TOKEN_WHITE };
        (kind, self.count, Vec::new())
    }
}

/// One rank's state in Safra's algorithm, apart from the messages that carry it (so that
/// the tests can drive it through any interleaving).
#[derive(Debug, Default)]
struct Safra {
    /// State messages sent minus received.
    count: i64,
    /// Received a state message since the token last left this rank.
    black: bool,
}

impl Safra {
    fn sent(&mut self) {
        self.count += 1;
    }

    fn received(&mut self) {
        self.count -= 1;
        self.black = true;
    }

    /// Rank 0, idle, sends a new probe: it whitens, and the token starts white and empty.
    fn start_probe(&mut self) -> Token {
        self.black = false;
        Token {
            count: 0,
            black: false,
        }
    }

    /// Another rank, idle, passes the token on: its count added, black if the token or
    /// the rank was; the rank whitens.
    fn pass(&mut self, token: Token) -> Token {
        let out = Token {
            count: token.count + self.count,
            black: token.black || self.black,
        };
        self.black = false;
        out
    }

    /// Rank 0, idle, with the token back: whether no rank has work and no message is in
    /// flight. Rank 0's own colour counts: a message sent by a rank the token had already
    /// passed and received by rank 0 lowers the sum by one, and can hide one in flight.
    fn probe_proves_the_end(&self, token: Token) -> bool {
        !token.black && !self.black && token.count + self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rhizome::World;

    /// Messages that beget messages, over `pes` PEs: PE 0 starts `seeds` chains, and a
    /// PE that receives `v > 0` sends `v - 1` on to one or two PEs (chosen from `v` and
    /// the sender), so work moves between PEs in bursts and idle spells. Returns the
    /// messages every PE received; a termination detected too early leaves some unread.
    fn chains(pes: usize, seeds: u32) -> Vec<u64> {
        World::builder()
            .pes(pes)
            .run(move |ctx| {
                let mut mail = Mail::open(ctx);
                let me = ctx.my_pe();
                let send = |mail: &Mail, v: u32| {
                    let to = (me + 1 + v as usize % pes.max(2)) % pes;
                    let to = if to == me { (me + 1) % pes } else { to };
                    mail.send_states(ctx, to, v.to_le_bytes().to_vec());
                };
                if me == 0 {
                    for s in 0..seeds {
                        send(&mail, 40 + s);
                    }
                }
                let mut received = 0u64;
                loop {
                    let got = mail.take_states(ctx);
                    if got.is_empty() {
                        match mail.wait(ctx) {
                            Woken::States => continue,
                            Woken::Stop => break,
                            Woken::PeerFailed => panic!("no PE failed"),
                        }
                    }
                    for bytes in got {
                        received += 1;
                        let v = u32::from_le_bytes(bytes[..].try_into().expect("4 bytes"));
                        // Some work between messages, so that PEs are busy at times.
                        std::hint::black_box((0..(v % 7) * 200).sum::<u32>());
                        if v > 0 {
                            send(&mail, v - 1);
                            if v % 5 == 0 {
                                send(&mail, v / 5);
                            }
                        }
                    }
                }
                // Every PE has stopped: nothing may arrive any more.
                ctx.barrier();
                assert!(mail.take_states(ctx).is_empty(), "states after the stop");
                received
            })
            .unwrap()
    }

    /// How many messages `chains` makes from a seed `v`.
    fn expected(v: u32) -> u64 {
        1 + match v {
            0 => 0,
            v if v % 5 == 0 => expected(v - 1) + expected(v / 5),
            v => expected(v - 1),
        }
    }

    #[test]
    fn stop_comes_only_after_every_message_is_handled() {
        for pes in [1, 2, 3, 4] {
            for round in 0..40 {
                let seeds = 1 + round % 6;
                let want: u64 = (0..seeds).map(|s| expected(40 + s)).sum();
                let got = chains(pes, seeds);
                assert_eq!(got.iter().sum::<u64>(), want, "{pes} PEs, {seeds} seeds");
            }
        }
    }

    /// The scripted interleaving that needs rank 0's colour (3 ranks, ring 0, 2, 1, 0):
    /// rank 2 sends `a` to rank 1 and passes the token (count 1); rank 1, idle, passes it
    /// on before `a` arrives; rank 2 then sends `b` to rank 0, which gets it before the
    /// token. The token's sum plus rank 0's count is 0 with `a` still in flight: only rank
    /// 0's colour keeps the probe from ending.
    #[test]
    fn a_message_to_rank_0_behind_the_token_keeps_the_probe_open() {
        let mut r = [Safra::default(), Safra::default(), Safra::default()];
        let token = r[0].start_probe();
        r[2].sent(); // a, to rank 1
        let token = r[2].pass(token);
        let token = r[1].pass(token);
        r[2].sent(); // b, to rank 0
        r[0].received(); // b
        assert_eq!(
            token.count + r[0].count,
            0,
            "the counts balance with `a` in flight"
        );
        assert!(!r[0].probe_proves_the_end(token), "rank 0 is black: no end");
        // `a` arrives; rank 1 goes black, and the next probe may not end either.
        r[1].received();
        let token = r[0].start_probe();
        let token = r[2].pass(token);
        let token = r[1].pass(token);
        assert!(
            !r[0].probe_proves_the_end(token),
            "rank 1 was black: no end"
        );
        // Nothing moves any more: the probe after that ends.
        let token = r[0].start_probe();
        let token = r[2].pass(token);
        let token = r[1].pass(token);
        assert!(r[0].probe_proves_the_end(token));
    }

    /// Random interleavings of Safra's rules on 2 to 5 ranks (a small deterministic
    /// generator, 20,000 runs): ranks send messages while they work, messages arrive in
    /// any order, an idle rank passes the token, and rank 0 probes again until a probe
    /// proves the end. A probe must never end while a message is in flight or a rank
    /// works, and one must end once everything is quiet.
    #[test]
    fn no_probe_ends_while_a_message_is_in_flight_or_a_rank_works() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: usize| {
            // xorshift64*: enough to shuffle the events of a test.
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            (seed.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
        };
        for run in 0..20_000 {
            let n = 2 + run % 4;
            let mut ranks: Vec<Safra> = (0..n).map(|_| Safra::default()).collect();
            let mut working = vec![false; n];
            working[0] = true;
            let mut budget: Vec<u32> = (0..n).map(|_| next(4) as u32).collect();
            budget[0] += 1;
            let mut in_flight: Vec<usize> = Vec::new();
            // Where the token is; `None` at rank 0: no probe under way.
            let mut token: (usize, Option<Token>) = (0, None);
            let mut steps = 0;
            loop {
                steps += 1;
                assert!(steps < 10_000, "run {run}: no probe ended");
                match next(4) {
                    0 => {
                        let r = next(n);
                        if working[r] && budget[r] > 0 {
                            budget[r] -= 1;
                            ranks[r].sent();
                            in_flight.push(next(n));
                        }
                    }
                    1 => {
                        let r = next(n);
                        working[r] = false;
                    }
                    2 if !in_flight.is_empty() => {
                        let to = in_flight.swap_remove(next(in_flight.len()));
                        ranks[to].received();
                        working[to] = true;
                    }
                    _ => {
                        let (at, held) = token;
                        if working[at] {
                            continue;
                        }
                        token = match (at, held) {
                            (0, Some(t)) if ranks[0].probe_proves_the_end(t) => {
                                assert!(
                                    in_flight.is_empty() && !working.contains(&true),
                                    "run {run}: the end while {} messages fly, working {working:?}",
                                    in_flight.len()
                                );
                                break;
                            }
                            (0, _) => (n - 1, Some(ranks[0].start_probe())),
                            (r, Some(t)) => (r - 1, Some(ranks[r].pass(t))),
                            (_, None) => unreachable!("only rank 0 starts a probe"),
                        };
                    }
                }
            }
        }
    }

    #[test]
    fn a_failed_rank_wakes_the_waiting_ones() {
        let woken = World::builder()
            .pes(3)
            .run(|ctx| {
                let mut mail = Mail::open(ctx);
                if ctx.my_pe() == 1 {
                    mail.fail(ctx);
                    return None;
                }
                Some(mail.wait(ctx))
            })
            .unwrap();
        assert_eq!(
            woken,
            vec![Some(Woken::PeerFailed), None, Some(Woken::PeerFailed)]
        );
    }
}
