//! The real stdout belongs to the protocol; fd 1 becomes a second stderr for everything else.

use std::fs::File;
use std::io::Write as _;

use nix::fcntl::{FcntlArg, FdFlag, fcntl};
use tokio::io::{AsyncReadExt as _, DuplexStream};
use tokio::task::JoinHandle;

use crate::error::Error;

/// Moves the protocol channel off fd 1 and points fd 1 at stderr, so a `println!` anywhere in
/// the process (or in a child that inherits stdout) lands in the host's log instead of
/// corrupting the protocol. Returns the protocol channel.
pub(crate) fn reserve_stdout() -> Result<File, Error> {
    let protocol = nix::unistd::dup(std::io::stdout()).map_err(Error::ReserveStdout)?;
    // A child process spawned by a handler must not inherit the protocol channel.
    fcntl(&protocol, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(Error::ReserveStdout)?;
    // Text std had buffered for fd 1 before this point now goes to stderr too, which is right:
    // it was never protocol.
    nix::unistd::dup2_stdout(std::io::stderr()).map_err(Error::ReserveStdout)?;
    Ok(File::from(protocol))
}

/// The protocol's two pipes opened afresh through `/proc/self/fd` and driven by the runtime's
/// reactor (epoll), so a call costs one wake-up of this process's one thread each way instead
/// of a hop through a blocking thread for every read and every write (tokio's `stdin()` and
/// [`blocking_writer`]). Each end is a new open file description of the same pipe, so the
/// non-blocking mode it needs reaches neither fd 0 nor anything that shares it (a child a
/// handler starts keeps a blocking stdin). `None` when either is not a pipe (a terminal, a
/// file, a socket): the caller falls back to blocking I/O.
pub(crate) fn pipes(
    protocol: &File,
) -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::fd::AsRawFd as _;
    let options = tokio::net::unix::pipe::OpenOptions::new();
    let reader = options.open_receiver("/proc/self/fd/0").ok()?;
    let writer = options
        .open_sender(format!("/proc/self/fd/{}", protocol.as_raw_fd()))
        .ok()?;
    Some((reader, writer))
}

/// An async writer whose bytes a task copies to `file` with blocking writes: the fallback when
/// the protocol's output is not a pipe (tokio writes its own stdout the same way).
///
/// When a write fails (the host stopped reading), the task ends and the returned stream's
/// next write fails, which closes the connection. Once the stream is dropped the task writes
/// what is still buffered and ends: await its handle (bounded) before the runtime stops, or
/// those bytes are lost.
pub(crate) fn blocking_writer(file: File, chunk_bytes: usize) -> (DuplexStream, JoinHandle<()>) {
    let chunk_bytes = chunk_bytes.max(1);
    let (ours, mut theirs) = tokio::io::duplex(chunk_bytes);
    let copier = tokio::spawn(async move {
        let mut buf = vec![0; chunk_bytes];
        let mut file = file;
        loop {
            let n = match theirs.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let chunk = buf[..n].to_vec();
            let written = tokio::task::spawn_blocking(move || {
                file.write_all(&chunk)?;
                file.flush()?;
                Ok::<_, std::io::Error>(file)
            })
            .await;
            match written {
                Ok(Ok(f)) => file = f,
                _ => break,
            }
        }
    });
    (ours, copier)
}
