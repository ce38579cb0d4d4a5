//! libibverbs through rdma-sys: which verbs devices exist, and the port
//! async events of one (PORT_ACTIVE/ERR, LID/SM change, CLIENT_REREGISTER).
//!
//! rdma-sys models `ibv_async_event.event_type` as a Rust enum; a libibverbs
//! newer than its bindings could report a value the enum lacks, which would
//! be undefined behaviour to read. Events are therefore read into our own
//! `#[repr(C)]` struct of the same size and the type is matched as a `u32`.

use std::ffi::{CStr, CString};
use std::io;
use std::os::raw::c_int;

/// `struct ibv_async_event`: a union of pointers / port number, then the
/// event type.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct RawAsyncEvent {
    /// `element`: for port events, `element.port_num` (an int) is its
    /// first member.
    element: u64,
    event_type: u32,
}

const _: () = assert!(size_of::<RawAsyncEvent>() == size_of::<rdma_sys::ibv_async_event>());

/// An async event of a verbs device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AsyncEvent {
    /// `enum ibv_event_type` as a number.
    pub(crate) event_type: u32,
    /// The port it is about (meaningful for port events).
    pub(crate) port: u32,
}

/// Names of the verbs devices on this machine. Empty (not an error) where
/// there are none, as under the simulator.
pub(crate) fn device_names() -> Vec<String> {
    let mut n: c_int = 0;
    // SAFETY: `n` is a valid out-pointer; a NULL result means no list.
    let list = unsafe { rdma_sys::ibv_get_device_list(&mut n) };
    if list.is_null() {
        return Vec::new();
    }
    let mut names = Vec::new();
    for i in 0..usize::try_from(n).unwrap_or(0) {
        // SAFETY: the list holds `n` valid device pointers.
        let dev = unsafe { *list.add(i) };
        if dev.is_null() {
            break;
        }
        // SAFETY: `dev` is a valid device; the name is a NUL-terminated
        // string owned by the device list, copied before the list is freed.
        let name = unsafe { CStr::from_ptr(rdma_sys::ibv_get_device_name(dev)) };
        names.push(name.to_string_lossy().into_owned());
    }
    // SAFETY: `list` came from ibv_get_device_list and is freed once.
    unsafe { rdma_sys::ibv_free_device_list(list) };
    names
}

/// An open verbs device, used only for its async event queue.
#[derive(Debug)]
pub(crate) struct VerbsContext {
    ctx: *mut rdma_sys::ibv_context,
}

// SAFETY: an ibv_context may be used from any thread; libibverbs locks
// internally and we only read events from one thread at a time (&mut self).
unsafe impl Send for VerbsContext {}

impl VerbsContext {
    /// Opens the device named `name`, with a non-blocking event queue.
    pub(crate) fn open(name: &str) -> io::Result<Self> {
        let wanted =
            CString::new(name).map_err(|_| io::Error::other("device name contains NUL"))?;
        let mut n: c_int = 0;
        // SAFETY: as in `device_names`.
        let list = unsafe { rdma_sys::ibv_get_device_list(&mut n) };
        if list.is_null() {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no verbs devices"));
        }
        let mut ctx = std::ptr::null_mut();
        for i in 0..usize::try_from(n).unwrap_or(0) {
            // SAFETY: the list holds `n` valid device pointers.
            let dev = unsafe { *list.add(i) };
            // SAFETY: `dev` is valid while the list lives.
            let dev_name = unsafe { CStr::from_ptr(rdma_sys::ibv_get_device_name(dev)) };
            if dev_name == wanted.as_c_str() {
                // SAFETY: `dev` is valid; the context outlives the list.
                ctx = unsafe { rdma_sys::ibv_open_device(dev) };
                break;
            }
        }
        // SAFETY: `list` came from ibv_get_device_list and is freed once.
        unsafe { rdma_sys::ibv_free_device_list(list) };
        if ctx.is_null() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("cannot open verbs device {name}"),
            ));
        }
        let this = Self { ctx };
        let fd = this.async_fd();
        // SAFETY: `fd` is the context's open async event descriptor.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        // SAFETY: as above; setting O_NONBLOCK does not invalidate it.
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(this)
    }

    fn async_fd(&self) -> c_int {
        // SAFETY: `ctx` is a valid open context for our lifetime.
        unsafe { (*self.ctx).async_fd }
    }

    /// Waits up to `timeout_ms` for an event and returns it (acknowledged),
    /// or `None` on time-out.
    pub(crate) fn next_event(&mut self, timeout_ms: c_int) -> io::Result<Option<AsyncEvent>> {
        let mut pfd = libc::pollfd {
            fd: self.async_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if n <= 0 {
            return Ok(None);
        }
        let mut raw = RawAsyncEvent::default();
        let ptr = (&mut raw as *mut RawAsyncEvent).cast::<rdma_sys::ibv_async_event>();
        // SAFETY: `raw` has the size and alignment of ibv_async_event
        // (asserted above) and is only ever read as our own struct.
        let r = unsafe { rdma_sys::ibv_get_async_event(self.ctx, ptr) };
        if r != 0 {
            let err = io::Error::last_os_error();
            return if err.kind() == io::ErrorKind::WouldBlock {
                Ok(None)
            } else {
                Err(err)
            };
        }
        // The port number is the union's first member, a C int at offset 0.
        let bytes = raw.element.to_ne_bytes();
        let port = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let event = AsyncEvent {
            event_type: raw.event_type,
            port,
        };
        // SAFETY: every event taken with ibv_get_async_event must be
        // acknowledged exactly once before the device is closed.
        unsafe { rdma_sys::ibv_ack_async_event(ptr) };
        Ok(Some(event))
    }
}

impl Drop for VerbsContext {
    fn drop(&mut self) {
        // SAFETY: `ctx` is open and closed exactly once; all events were
        // acknowledged as they were read.
        unsafe { rdma_sys::ibv_close_device(self.ctx) };
    }
}
