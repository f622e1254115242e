//! Starting MPI (once per process) and making a rank's transport.

use super::lock::{Locked, MpiLock};
use super::messages::SendProgress;
use super::raw::{H, check, error_string};
use super::{MAX_SEGMENTS, MpiTransport, MsgRma, shared};
use crate::transport::TransportError;
use ::mpi::ffi;
use std::collections::VecDeque;
use std::ffi::c_int;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, OnceLock};

extern "C" fn finalize_at_exit() {
    let (mut init, mut fin) = (0, 0);
    // SAFETY: MPI_Initialized and MPI_Finalized may be called at any time, even after
    // MPI_Finalize; MPI_Finalize is called at most once, from the exiting thread, after
    // every world of the process has ended.
    unsafe {
        ffi::MPI_Initialized(&mut init);
        ffi::MPI_Finalized(&mut fin);
        if init != 0 && fin == 0 {
            ffi::MPI_Finalize();
        }
    }
}

// SAFETY: the C library's `atexit(3)`, declared with its C signature.
unsafe extern "C" {
    /// Registers `f` to run at normal process exit.
    fn atexit(f: extern "C" fn()) -> c_int;
}

/// Initialises MPI once per process; the thread level provided, or the error text.
fn init_mpi() -> Result<c_int, TransportError> {
    static INIT: OnceLock<Result<c_int, String>> = OnceLock::new();
    INIT.get_or_init(|| {
        if std::env::var_os("OMPI_MCA_osc").is_none() {
            // SAFETY: MPI is not initialised yet, so no MPI thread reads the environment;
            // Rust's own environment accesses take std's environment lock. This runs once.
            unsafe { std::env::set_var("OMPI_MCA_osc", "sm,ucx") };
        }
        let (mut already, mut provided): (c_int, c_int) = (0, 0);
        // SAFETY: MPI_Initialized may be called at any time; `already` is a valid local.
        unsafe { ffi::MPI_Initialized(&mut already) };
        if already != 0 {
            // Someone else (e.g. the program through the `mpi` crate) initialised MPI and
            // will finalise it; it must allow calls from several threads, one at a time.
            // SAFETY: MPI is initialised; `provided` is a valid local.
            unsafe { ffi::MPI_Query_thread(&mut provided) };
            // SAFETY: reading a constant handle initialised by the binding.
            return if provided < unsafe { ffi::RSMPI_THREAD_SERIALIZED } {
                Err(format!(
                    "MPI was initialised with thread level {provided}; rhizome needs MPI_THREAD_SERIALIZED or higher"
                ))
            } else {
                Ok(provided)
            };
        }
        // SAFETY: MPI_Init_thread accepts null argc/argv; it runs once (OnceLock).
        let rc = unsafe {
            ffi::MPI_Init_thread(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                ffi::RSMPI_THREAD_MULTIPLE,
                &mut provided,
            )
        };
        if rc != 0 {
            return Err(format!("MPI_Init_thread failed: {}", error_string(rc)));
        }
        // SAFETY: reading a constant handle initialised by the binding.
        if provided < unsafe { ffi::RSMPI_THREAD_SERIALIZED } {
            return Err(format!(
                "the MPI library provides thread level {provided}, below MPI_THREAD_SERIALIZED"
            ));
        }
        // SAFETY: `finalize_at_exit` is a plain extern "C" function that never unwinds.
        unsafe { atexit(finalize_at_exit) };
        Ok(provided)
    })
    .clone()
    .map_err(TransportError::Other)
}

/// How one-sided operations reach other ranks: `RHIZOME_MPI_RMA` (see the module docs of
/// the transport).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RmaMode {
    /// Shared windows when every rank is on this node, else RMA windows.
    Auto,
    /// Shared windows, or an error.
    Shared,
    /// MPI RMA windows everywhere.
    Windows,
    /// Requests and replies over two-sided messages.
    Messages,
}

fn rma_mode() -> Result<RmaMode, TransportError> {
    match std::env::var("RHIZOME_MPI_RMA").as_deref().map(str::trim) {
        Err(_) | Ok("" | "auto") => Ok(RmaMode::Auto),
        Ok("shared") => Ok(RmaMode::Shared),
        Ok("windows") => Ok(RmaMode::Windows),
        Ok("messages") => Ok(RmaMode::Messages),
        Ok(other) => Err(TransportError::Other(format!(
            "RHIZOME_MPI_RMA={other:?} is not one of `auto`, `shared`, `windows`, `messages`"
        ))),
    }
}

impl MpiTransport {
    /// Initialises MPI (the first time) and returns this rank's transport, on a private
    /// duplicate of `MPI_COMM_WORLD` whose errors are returned rather than fatal.
    pub fn init() -> Result<MpiTransport, TransportError> {
        let provided = init_mpi()?;
        // SAFETY: reading a constant handle initialised by the binding.
        let thread_multiple = provided >= unsafe { ffi::RSMPI_THREAD_MULTIPLE };
        let mut comm: ffi::MPI_Comm = ffi::MPI_Comm(std::ptr::null_mut());
        let (mut rank, mut size) = (0, 0);
        // SAFETY: MPI is initialised; the out-pointers are valid locals; all MPI calls of
        // a new transport happen before it is shared (no other thread can race them)...
        unsafe {
            check(ffi::MPI_Comm_dup(ffi::RSMPI_COMM_WORLD, &mut comm), || {
                "MPI_Comm_dup".into()
            })?;
            check(
                ffi::MPI_Comm_set_errhandler(comm, ffi::RSMPI_ERRORS_RETURN),
                || "MPI_Comm_set_errhandler".into(),
            )?;
            check(ffi::MPI_Comm_rank(comm, &mut rank), || {
                "MPI_Comm_rank".into()
            })?;
            check(ffi::MPI_Comm_size(comm, &mut size), || {
                "MPI_Comm_size".into()
            })?;
        }
        // ...except for other worlds' transports, which the module docs forbid at the
        // same time.
        Ok(MpiTransport {
            rank: rank as usize,
            size: size as usize,
            comm: H(comm),
            thread_multiple,
            progress: None,
            lock: Arc::new(MpiLock::new(Locked {
                sends: Vec::new(),
                own: VecDeque::new(),
                free: Vec::new(),
                origins: Vec::new(),
            })),
            segments: (0..MAX_SEGMENTS).map(|_| OnceLock::new()).collect(),
            next_segment: AtomicU32::new(0),
            msg: None,
            shared: false,
        })
        .and_then(|mut t| {
            let mode = rma_mode()?;
            if matches!(mode, RmaMode::Auto | RmaMode::Shared) {
                t.shared = shared::one_node(t.comm, t.size)?;
                if mode == RmaMode::Shared && !t.shared {
                    return Err(TransportError::Other(
                        "RHIZOME_MPI_RMA=shared, but the ranks are on several nodes".into(),
                    ));
                }
            }
            if mode == RmaMode::Messages {
                if !t.thread_multiple {
                    return Err(TransportError::Other(
                        "RHIZOME_MPI_RMA=messages needs an MPI with MPI_THREAD_MULTIPLE".into(),
                    ));
                }
                t.msg = Some(MsgRma::start(t.comm.0, t.rank, t.size, MAX_SEGMENTS)?);
            }
            Ok(t)
        })
        .map(|mut t| {
            // Under MPI_THREAD_SERIALIZED a second thread calling MPI could meet a UCX
            // worker made for one thread (see "Threads" above): no progress thread then,
            // and large sends move when this PE next calls MPI.
            if t.thread_multiple {
                t.progress = SendProgress::start(Arc::clone(&t.lock)).ok();
            }
            t
        })
    }
}
