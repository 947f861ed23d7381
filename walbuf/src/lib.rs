//! A SQLite VFS that hands the write-ahead log a commit's frames in a few large writes.
//!
//! SQLite writes each frame of the log with two `pwrite`s, a 24-byte header and then the page,
//! so a commit of a few hundred changed pages is several hundred system calls, each through
//! the file system's write path, and each page write straddles two pages of the kernel's cache.
//! In bankd's spread book transfers (about 35 transfers and a few hundred log frames a
//! commit), those calls were half of each `COMMIT`'s CPU time, spent on the one writer every
//! write waits for.
//!
//! This VFS is the platform's default VFS (`unix` on Linux) with one change: a log file opened
//! through it gathers consecutive writes in memory (up to [`BUFFER_BYTES`]) and writes them with
//! one `pwrite` before anything that needs them on disk or in the file: a read, a sync, a size
//! query, a truncation, a file control, closing the file, or a write elsewhere in the file.
//! Every other file (the database, journals, the shared-memory index) is the default VFS's own
//! file, untouched.
//!
//! # When it is safe: `synchronous=FULL` only
//!
//! Another connection finds new log frames through the shared-memory index, whose header the
//! committing connection updates after writing the frames. With `synchronous=FULL`, SQLite
//! syncs the log at every commit after writing its frames and before publishing them, and the
//! sync writes out this VFS's buffer first: no other connection can be told about a frame that
//! is still in the buffer, and a commit is on disk when it returns, exactly as without this VFS.
//! Frames written before a commit (a transaction spilling pages from its cache) are visible only
//! to the writing connection, which reads them back through this file and so flushes first.
//! With `synchronous=NORMAL` (or `OFF`) a commit publishes its frames without a sync, so a
//! connection using this VFS must run with `synchronous=FULL` or `EXTRA`: callers
//! ([`register`]'s users) choose the VFS only for such connections.
//!
//! A failed buffered write surfaces at the flush (in the sync of the commit, for instance),
//! where SQLite treats it as the failure of that operation and rolls the transaction back.

#![allow(unsafe_code)]

use std::ffi::{CStr, c_char, c_int, c_void};
use std::mem::size_of;
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

use libsqlite3_sys as ffi;

/// The name the VFS is registered under, for `sqlite3_open_v2` (rusqlite's
/// `Connection::open_with_flags_and_vfs`).
pub const NAME: &str = "bankd-walbuf";
const NAME_C: &CStr = c"bankd-walbuf";

/// The most a log file keeps unwritten; a longer run of consecutive writes goes out in pieces
/// of at most this size. The `unix` VFS writes at most 128 KiB - 1 bytes per call (its
/// `seekAndWriteFd` masks the length with `0x1ffff`), so this stays under that: 30 frames of
/// 4 KiB pages, one `pwrite` where SQLite makes 60.
pub const BUFFER_BYTES: usize = 128 * 1024 - 4096;

/// The default VFS this one wraps, set once by [`register`].
static BASE: AtomicPtr<ffi::sqlite3_vfs> = AtomicPtr::new(ptr::null_mut());

/// Registers the VFS (once per process; later calls return the first call's outcome). It is
/// not made the default: connections ask for it by [`NAME`].
///
/// # Errors
/// SQLite's result code when it cannot initialise or has no default VFS to wrap.
pub fn register() -> Result<&'static str, c_int> {
    static REGISTERED: OnceLock<Result<(), c_int>> = OnceLock::new();
    let outcome = REGISTERED.get_or_init(|| {
        // SAFETY: sqlite3_initialize and sqlite3_vfs_find may be called at any time; a null name
        // asks for the default VFS.
        let base = unsafe {
            let rc = ffi::sqlite3_initialize();
            if rc != ffi::SQLITE_OK {
                return Err(rc);
            }
            ffi::sqlite3_vfs_find(ptr::null())
        };
        if base.is_null() {
            return Err(ffi::SQLITE_ERROR);
        }
        BASE.store(base, Ordering::Release);
        // SAFETY: `base` is a registered VFS, which SQLite keeps for the life of the process.
        let (base_file, max_path) = unsafe { ((*base).szOsFile, (*base).mxPathname) };
        let Ok(base_file_bytes) = usize::try_from(base_file) else {
            return Err(ffi::SQLITE_ERROR);
        };
        let Ok(file_bytes) = c_int::try_from(INNER_OFFSET + base_file_bytes) else {
            return Err(ffi::SQLITE_ERROR);
        };
        let vfs = Box::new(ffi::sqlite3_vfs {
            iVersion: 2,
            // Room for a log file's own fields followed by the default VFS's file; any other
            // file is the default VFS's file alone, which fits too.
            szOsFile: file_bytes,
            mxPathname: max_path,
            pNext: ptr::null_mut(),
            zName: NAME_C.as_ptr(),
            pAppData: ptr::null_mut(),
            xOpen: Some(open),
            xDelete: Some(delete),
            xAccess: Some(access),
            xFullPathname: Some(full_pathname),
            xDlOpen: Some(dl_open),
            xDlError: Some(dl_error),
            xDlSym: Some(dl_sym),
            xDlClose: Some(dl_close),
            xRandomness: Some(randomness),
            xSleep: Some(sleep),
            xCurrentTime: Some(current_time),
            xGetLastError: Some(get_last_error),
            xCurrentTimeInt64: Some(current_time_int64),
            xSetSystemCall: None,
            xGetSystemCall: None,
            xNextSystemCall: None,
        });
        // SAFETY: SQLite keeps the pointer for the life of the process, so the VFS is leaked on
        // purpose; every callback it names matches the C signature.
        let rc = unsafe { ffi::sqlite3_vfs_register(Box::into_raw(vfs), 0) };
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(rc)
        }
    });
    outcome.map(|()| NAME)
}

fn base() -> *mut ffi::sqlite3_vfs {
    BASE.load(Ordering::Acquire)
}

/// A log file: the methods below, the unwritten bytes, and the default VFS's file after them.
#[repr(C)]
struct LogFile {
    /// First, so that SQLite's `sqlite3_file*` is a `LogFile*`; `pMethods` is [`LOG_METHODS`].
    base: ffi::sqlite3_file,
    /// The default VFS's file, `INNER_OFFSET` bytes into this allocation.
    inner: *mut ffi::sqlite3_file,
    /// Where in the file `pending` goes.
    pending_at: i64,
    pending: Vec<u8>,
}

/// Where the default VFS's file starts inside a log file's allocation (8-byte aligned, as
/// SQLite's allocations are).
const INNER_OFFSET: usize = size_of::<LogFile>().next_multiple_of(8);

unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let base = base();
    // SAFETY: `base` was set before this VFS was registered and is never freed.
    let Some(base_open) = (unsafe { (*base).xOpen }) else {
        return ffi::SQLITE_ERROR;
    };
    if flags & ffi::SQLITE_OPEN_WAL == 0 {
        // SAFETY: `file` has room for szOsFile bytes, more than the default VFS's file needs.
        return unsafe { base_open(base, name, file, flags, out_flags) };
    }
    // SAFETY: the allocation is INNER_OFFSET + the default VFS's szOsFile bytes (`register`).
    let inner = unsafe { file.cast::<u8>().add(INNER_OFFSET) }.cast::<ffi::sqlite3_file>();
    // SAFETY: as above; the default VFS leaves `inner.pMethods` null when it fails.
    let rc = unsafe { base_open(base, name, inner, flags, out_flags) };
    if rc != ffi::SQLITE_OK {
        // SAFETY: SQLite requires pMethods to be valid or null after xOpen, even on failure.
        unsafe { (*file).pMethods = ptr::null() };
        return rc;
    }
    // SAFETY: the first INNER_OFFSET bytes are ours; SQLite does not initialise them.
    unsafe {
        file.cast::<LogFile>().write(LogFile {
            base: ffi::sqlite3_file {
                pMethods: &LOG_METHODS,
            },
            inner,
            pending_at: 0,
            pending: Vec::new(),
        });
    }
    ffi::SQLITE_OK
}

/// The log file behind SQLite's handle.
///
/// # Safety
/// `file` must be a handle opened by [`open`] with [`LOG_METHODS`], not yet closed, and used by
/// one thread at a time (SQLite's rule for a connection's files).
unsafe fn log<'a>(file: *mut ffi::sqlite3_file) -> &'a mut LogFile {
    // SAFETY: the caller's contract.
    unsafe { &mut *file.cast::<LogFile>() }
}

/// The default VFS's methods for the inner file.
fn inner_methods(log: &LogFile) -> &'static ffi::sqlite3_io_methods {
    // SAFETY: the inner file opened successfully, so its pMethods points at the default VFS's
    // static method table.
    unsafe { &*(*log.inner).pMethods }
}

/// Writes out the pending bytes, if any. They are dropped either way: after a failed write
/// SQLite fails the operation that needed them and rolls its transaction back.
fn flush(log: &mut LogFile) -> c_int {
    if log.pending.is_empty() {
        return ffi::SQLITE_OK;
    }
    let Some(write) = inner_methods(log).xWrite else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    // At most BUFFER_BYTES, which fits a c_int.
    let len = log.pending.len() as c_int;
    // SAFETY: the inner file is open; the buffer is valid for `len` bytes.
    let rc = unsafe { write(log.inner, log.pending.as_ptr().cast(), len, log.pending_at) };
    log.pending.clear();
    rc
}

unsafe extern "C" fn log_write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    // SAFETY: SQLite calls this only on handles opened by `open` with LOG_METHODS.
    let log = unsafe { log(file) };
    let Ok(len) = usize::try_from(amount) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    let follows = log.pending_at + log.pending.len() as i64 == offset;
    if !log.pending.is_empty() && (!follows || log.pending.len() + len > BUFFER_BYTES) {
        let rc = flush(log);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
    }
    if len > BUFFER_BYTES {
        let Some(write) = inner_methods(log).xWrite else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        // SAFETY: passed through unchanged.
        return unsafe { write(log.inner, data, amount, offset) };
    }
    if log.pending.is_empty() {
        log.pending_at = offset;
        log.pending.reserve_exact(BUFFER_BYTES);
    }
    // SAFETY: SQLite passes `amount` readable bytes at `data`.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
    log.pending.extend_from_slice(bytes);
    ffi::SQLITE_OK
}

unsafe extern "C" fn log_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls this only on handles opened by `open` with LOG_METHODS.
    let log = unsafe { log(file) };
    let flushed = flush(log);
    let closed = match inner_methods(log).xClose {
        // SAFETY: the inner file is open; it is not used again.
        Some(close) => unsafe { close(log.inner) },
        None => ffi::SQLITE_OK,
    };
    // SAFETY: written by `open`, dropped once here; SQLite frees the allocation itself.
    unsafe { ptr::drop_in_place(file.cast::<LogFile>()) };
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        closed
    }
}

/// Defines a method that writes out the pending bytes, then calls the default VFS's method of
/// the same signature (`$missing` when it has none).
macro_rules! flushing {
    ($name:ident, $field:ident, $missing:expr, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            // SAFETY: SQLite calls this only on handles opened by `open` with LOG_METHODS.
            let log = unsafe { log(file) };
            let rc = flush(log);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            match inner_methods(log).$field {
                // SAFETY: the inner file is open; the arguments are SQLite's, unchanged.
                Some(method) => unsafe { method(log.inner $(, $arg)*) },
                None => $missing,
            }
        }
    };
}

/// Defines a method that calls the default VFS's method as it is: these neither read nor write
/// the file's bytes.
macro_rules! passing {
    ($name:ident, $field:ident, $ret:ty, $missing:expr, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> $ret {
            // SAFETY: SQLite calls this only on handles opened by `open` with LOG_METHODS.
            let log = unsafe { log(file) };
            match inner_methods(log).$field {
                // SAFETY: the inner file is open; the arguments are SQLite's, unchanged.
                Some(method) => unsafe { method(log.inner $(, $arg)*) },
                None => $missing,
            }
        }
    };
}

flushing!(log_read, xRead, ffi::SQLITE_IOERR_READ, (data: *mut c_void, amount: c_int, offset: i64));
flushing!(log_truncate, xTruncate, ffi::SQLITE_IOERR_TRUNCATE, (size: i64));
flushing!(log_sync, xSync, ffi::SQLITE_IOERR_FSYNC, (flags: c_int));
flushing!(log_file_size, xFileSize, ffi::SQLITE_IOERR_FSTAT, (size: *mut i64));
flushing!(log_file_control, xFileControl, ffi::SQLITE_NOTFOUND, (op: c_int, arg: *mut c_void));
flushing!(log_fetch, xFetch, {
    // SAFETY: SQLite passes a valid out-pointer; null means "read it with xRead instead".
    unsafe { *page = ptr::null_mut() };
    ffi::SQLITE_OK
}, (offset: i64, amount: c_int, page: *mut *mut c_void));
passing!(log_lock, xLock, c_int, ffi::SQLITE_OK, (level: c_int));
passing!(log_unlock, xUnlock, c_int, ffi::SQLITE_OK, (level: c_int));
passing!(log_check_reserved_lock, xCheckReservedLock, c_int, ffi::SQLITE_OK, (out: *mut c_int));
passing!(log_sector_size, xSectorSize, c_int, 4096, ());
passing!(
    log_device_characteristics,
    xDeviceCharacteristics,
    c_int,
    0,
    ()
);
passing!(log_shm_map, xShmMap, c_int, ffi::SQLITE_IOERR_SHMMAP,
    (page: c_int, page_size: c_int, extend: c_int, out: *mut *mut c_void));
passing!(log_shm_lock, xShmLock, c_int, ffi::SQLITE_IOERR_SHMLOCK,
    (offset: c_int, n: c_int, flags: c_int));
passing!(log_shm_barrier, xShmBarrier, (), (), ());
passing!(log_shm_unmap, xShmUnmap, c_int, ffi::SQLITE_OK, (delete: c_int));
passing!(log_unfetch, xUnfetch, c_int, ffi::SQLITE_OK, (offset: i64, page: *mut c_void));

static LOG_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(log_close),
    xRead: Some(log_read),
    xWrite: Some(log_write),
    xTruncate: Some(log_truncate),
    xSync: Some(log_sync),
    xFileSize: Some(log_file_size),
    xLock: Some(log_lock),
    xUnlock: Some(log_unlock),
    xCheckReservedLock: Some(log_check_reserved_lock),
    xFileControl: Some(log_file_control),
    xSectorSize: Some(log_sector_size),
    xDeviceCharacteristics: Some(log_device_characteristics),
    xShmMap: Some(log_shm_map),
    xShmLock: Some(log_shm_lock),
    xShmBarrier: Some(log_shm_barrier),
    xShmUnmap: Some(log_shm_unmap),
    xFetch: Some(log_fetch),
    xUnfetch: Some(log_unfetch),
};

/// Defines a VFS method that calls the default VFS's method with the default VFS itself.
macro_rules! delegating {
    ($name:ident, $field:ident, $ret:ty, $missing:expr, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(_vfs: *mut ffi::sqlite3_vfs $(, $arg: $ty)*) -> $ret {
            let base = base();
            // SAFETY: `base` was set before this VFS was registered and is never freed.
            let method = unsafe { (*base).$field };
            match method {
                // SAFETY: the default VFS's own method, given itself and SQLite's arguments.
                Some(method) => unsafe { method(base $(, $arg)*) },
                None => $missing,
            }
        }
    };
}

delegating!(delete, xDelete, c_int, ffi::SQLITE_IOERR_DELETE, (name: *const c_char, sync_dir: c_int));
delegating!(access, xAccess, c_int, ffi::SQLITE_IOERR_ACCESS,
    (name: *const c_char, flags: c_int, out: *mut c_int));
delegating!(full_pathname, xFullPathname, c_int, ffi::SQLITE_CANTOPEN,
    (name: *const c_char, size: c_int, out: *mut c_char));
delegating!(dl_open, xDlOpen, *mut c_void, ptr::null_mut(), (name: *const c_char));
delegating!(dl_error, xDlError, (), (), (size: c_int, message: *mut c_char));
delegating!(dl_close, xDlClose, (), (), (handle: *mut c_void));
delegating!(randomness, xRandomness, c_int, 0, (size: c_int, out: *mut c_char));
delegating!(sleep, xSleep, c_int, 0, (micros: c_int));
delegating!(current_time, xCurrentTime, c_int, ffi::SQLITE_ERROR, (out: *mut f64));
delegating!(get_last_error, xGetLastError, c_int, 0, (size: c_int, out: *mut c_char));
delegating!(current_time_int64, xCurrentTimeInt64, c_int, ffi::SQLITE_ERROR, (out: *mut i64));

type Symbol = Option<unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *mut c_void, *const c_char)>;
delegating!(dl_sym, xDlSym, Symbol, None, (handle: *mut c_void, symbol: *const c_char));
