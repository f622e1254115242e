//! `netns_wire`: a wire with a fixed one-way latency between network namespaces, in user
//! space, for `scripts/netns-cluster.sh up N --delay-us D`.
//!
//! Why it exists: the script's "hosts" are network namespaces, and the usual way to give
//! their link a latency, `tc qdisc ... netem`, needs the `sch_netem` kernel module, which
//! kernels without modules (like the one this project is measured on) do not have. So the
//! script gives each host a TUN device instead of a veth end, and this program is the
//! cable: it opens the TUN device inside every host's namespace, reads the IPv4 packets
//! each host sends, and writes each one into the TUN device of the host that owns its
//! destination address, `D` microseconds after it was read. Packets keep their order (one
//! first-in first-out queue per destination; every packet waits the same delay).
//!
//! Why Rust and not a script: CI runs on fresh Debian images that have cargo (the
//! project builds with it) but not necessarily Python, and the TUN ioctl, `setns` and a
//! sub-millisecond `ppoll` are a few `libc` calls, a crate the workspace already uses.
//!
//! Usage (as root; the namespaces and their TUN devices exist, made by the script):
//!
//! ```text
//! netns_wire --delay-us 50 --dev eth0 rz-h1=10.231.0.11 rz-h2=10.231.0.12
//! ```
//!
//! It prints `netns_wire: ready` once every device is attached, and exits when a device
//! goes away (its namespace was deleted) or on a signal.

use std::collections::VecDeque;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The largest packet a TUN device hands over (its largest MTU is 65535).
const MAX_PACKET: usize = 65536;
/// Bytes a destination's queue may hold; past it packets are dropped, as a switch would.
const QUEUE_BYTES: usize = 16 << 20;

/// One host: its namespace's TUN device and the address it answers to.
struct Port {
    name: String,
    addr: Ipv4Addr,
    tun: OwnedFd,
}

/// A packet on the wire, to be written at `due`.
struct InFlight {
    due: Instant,
    bytes: Vec<u8>,
}

/// What the command line asked for.
struct Config {
    delay: Duration,
    dev: String,
    hosts: Vec<(String, Ipv4Addr)>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Config, String> {
    let mut delay = None;
    let mut dev = "eth0".to_string();
    let mut hosts = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--delay-us" => {
                let value = args.next().ok_or("--delay-us needs microseconds")?;
                let us: u64 = value
                    .parse()
                    .map_err(|_| format!("--delay-us needs whole microseconds, not '{value}'"))?;
                delay = Some(Duration::from_micros(us));
            }
            "--dev" => dev = args.next().ok_or("--dev needs an interface name")?,
            host => {
                let (name, addr) = host
                    .split_once('=')
                    .ok_or_else(|| format!("expected NAMESPACE=IPV4, not '{host}'"))?;
                let addr: Ipv4Addr = addr
                    .parse()
                    .map_err(|_| format!("'{addr}' is not an IPv4 address"))?;
                hosts.push((name.to_string(), addr));
            }
        }
    }
    let delay = delay.ok_or("--delay-us is required")?;
    if dev.is_empty() || dev.len() >= libc::IFNAMSIZ {
        return Err(format!("interface name '{dev}' must have 1 to 15 bytes"));
    }
    if hosts.len() < 2 {
        return Err("a wire needs at least 2 hosts (NAMESPACE=IPV4 ...)".into());
    }
    Ok(Config { delay, dev, hosts })
}

fn os_error(what: &str) -> String {
    format!("{what}: {}", io::Error::last_os_error())
}

/// Opens `path` read-only for `setns`.
fn open_namespace(path: &str) -> Result<File, String> {
    File::open(path).map_err(|e| format!("{path}: {e}"))
}

/// Enters the network namespace behind `ns`. This thread only: the process is single
/// threaded, and a TUN device belongs to the namespace its file was opened in.
fn enter(ns: &File, what: &str) -> Result<(), String> {
    // SAFETY: `ns` is an open namespace file; setns reads only its descriptor.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(os_error(&format!("setns into {what}")));
    }
    Ok(())
}

/// Attaches to the TUN device `dev` of the current network namespace, non-blocking.
fn attach_tun(dev: &str) -> Result<OwnedFd, String> {
    let path = CString::new("/dev/net/tun").expect("no NUL");
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(os_error("/dev/net/tun"));
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let tun = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: an all-zero ifreq is valid (a name of NULs, zero flags).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in req.ifr_name.iter_mut().zip(dev.bytes()) {
        *slot = byte as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes one ifreq, which `req` is, for the call's length.
    if unsafe { libc::ioctl(tun.as_raw_fd(), libc::TUNSETIFF, &mut req) } != 0 {
        return Err(os_error(&format!("attaching to TUN device {dev}")));
    }
    Ok(tun)
}

/// Attaches to every host's device, returning to this process's own namespace after.
fn attach_all(config: &Config) -> Result<Vec<Port>, String> {
    let home = open_namespace("/proc/self/ns/net")?;
    let mut ports = Vec::new();
    for (name, addr) in &config.hosts {
        let ns = open_namespace(&format!("/run/netns/{name}"))?;
        enter(&ns, name)?;
        let tun = attach_tun(&config.dev).map_err(|e| format!("{name}: {e}"));
        enter(&home, "this process's namespace")?;
        ports.push(Port {
            name: name.clone(),
            addr: *addr,
            tun: tun?,
        });
    }
    Ok(ports)
}

/// The port that owns an IPv4 packet's destination address, if any.
fn destination(ports: &[Port], packet: &[u8]) -> Option<usize> {
    if packet.len() < 20 || packet[0] >> 4 != 4 {
        return None;
    }
    let dst = Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]);
    ports.iter().position(|p| p.addr == dst)
}

/// The wire: reads what every port sends, delivers it `delay` later, in order.
struct Wire {
    ports: Vec<Port>,
    delay: Duration,
    queues: Vec<VecDeque<InFlight>>,
    queued_bytes: Vec<usize>,
    spare: Vec<Vec<u8>>,
    scratch: Vec<u8>,
}

impl Wire {
    fn new(ports: Vec<Port>, delay: Duration) -> Self {
        let n = ports.len();
        Wire {
            ports,
            delay,
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            queued_bytes: vec![0; n],
            spare: Vec::new(),
            scratch: vec![0; MAX_PACKET],
        }
    }

    /// Reads every packet waiting on port `from` and queues it for its destination.
    fn receive(&mut self, from: usize) -> Result<(), String> {
        loop {
            let fd = self.ports[from].tun.as_raw_fd();
            // SAFETY: `scratch` is a writable buffer of `scratch.len()` bytes.
            let n = unsafe { libc::read(fd, self.scratch.as_mut_ptr().cast(), self.scratch.len()) };
            if n < 0 {
                let err = io::Error::last_os_error();
                return match err.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(()),
                    _ => Err(format!("reading from {}: {err}", self.ports[from].name)),
                };
            }
            let due = Instant::now() + self.delay;
            let packet = &self.scratch[..n as usize];
            let Some(to) = destination(&self.ports, packet).filter(|&to| to != from) else {
                continue; // not for another host (IPv6 chatter, a stray address): dropped
            };
            if self.queued_bytes[to] + packet.len() > QUEUE_BYTES {
                continue; // the destination's queue is full: dropped, as a switch would
            }
            let mut bytes = self.spare.pop().unwrap_or_default();
            bytes.clear();
            bytes.extend_from_slice(packet);
            self.queued_bytes[to] += bytes.len();
            self.queues[to].push_back(InFlight { due, bytes });
        }
    }

    /// Writes every packet whose time has come; returns the earliest time still to come.
    fn deliver(&mut self) -> Option<Instant> {
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        for (to, queue) in self.queues.iter_mut().enumerate() {
            while let Some(head) = queue.front() {
                if head.due > now {
                    next = Some(next.map_or(head.due, |t| t.min(head.due)));
                    break;
                }
                let packet = queue.pop_front().expect("front exists");
                let fd = self.ports[to].tun.as_raw_fd();
                // SAFETY: `packet.bytes` is a readable buffer of its length. A failed
                // write (the device is momentarily down) loses the packet, as a wire would.
                unsafe { libc::write(fd, packet.bytes.as_ptr().cast(), packet.bytes.len()) };
                self.queued_bytes[to] -= packet.bytes.len();
                self.spare.push(packet.bytes);
            }
        }
        next
    }

    /// Runs until a device goes away (its namespace was deleted): returns which.
    fn run(&mut self) -> Result<String, String> {
        let mut polls: Vec<libc::pollfd> = self
            .ports
            .iter()
            .map(|p| libc::pollfd {
                fd: p.tun.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        loop {
            let next = self.deliver();
            let wait = next.map(|t| {
                let left = t.saturating_duration_since(Instant::now());
                libc::timespec {
                    tv_sec: left.as_secs() as libc::time_t,
                    tv_nsec: left.subsec_nanos() as libc::c_long,
                }
            });
            let timeout = wait.as_ref().map_or(std::ptr::null(), |t| t as *const _);
            // SAFETY: `polls` holds `polls.len()` valid entries; `timeout` is null or
            // points to `wait`, which lives across the call; no signal mask is changed.
            let ready = unsafe {
                libc::ppoll(
                    polls.as_mut_ptr(),
                    polls.len() as libc::nfds_t,
                    timeout,
                    std::ptr::null(),
                )
            };
            if ready < 0 {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(format!("ppoll: {err}"));
            }
            for (from, poll) in polls.iter().enumerate() {
                let revents = poll.revents;
                if revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                    return Ok(format!("the device of {} went away", self.ports[from].name));
                }
                if revents & libc::POLLIN != 0 {
                    self.receive(from)?;
                }
            }
        }
    }
}

fn main() -> ExitCode {
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("netns_wire: error: {e}");
            eprintln!(
                "usage: netns_wire --delay-us US [--dev eth0] NAMESPACE=IPV4 NAMESPACE=IPV4 ..."
            );
            return ExitCode::from(2);
        }
    };
    // Sleeps end on time, not up to 50 us late (the default timer slack), which would be
    // as much again as the delay asked for.
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let ports = match attach_all(&config) {
        Ok(ports) => ports,
        Err(e) => {
            eprintln!("netns_wire: error: {e}");
            return ExitCode::from(1);
        }
    };
    println!(
        "netns_wire: ready, {} hosts on {}, one-way delay {} us",
        ports.len(),
        config.dev,
        config.delay.as_micros()
    );
    let _ = io::stdout().flush();
    match Wire::new(ports, config.delay).run() {
        Ok(why) => {
            eprintln!("netns_wire: {why}; stopping");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("netns_wire: {e}");
            ExitCode::from(1)
        }
    }
}
