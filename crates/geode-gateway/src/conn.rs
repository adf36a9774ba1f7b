//! The accept loop: at most [`Limits::max_connections`] connections at once (beyond them, new
//! ones wait in the kernel's backlog instead of using the process's file descriptors), each
//! given [`Limits::client_timeout`] to send a request head (an idle keep-alive connection is
//! closed after the same time) and to take the next piece of an answer (a client that stops
//! reading would otherwise hold its answer in memory for ever), and a graceful stop that
//! closes idle connections at once, half-sent ones within the client timeout, and waits for
//! the requests in flight.
//!
//! Why not `axum::serve`: it sets no header-read timeout and no connection limit, so a client
//! with no key could hold thousands of half-sent heads open, and one of them kept a SIGTERM
//! from ever finishing.

use crate::Limits;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_io_timeout::TimeoutStream;

/// How long the loop rests after an accept error such as too many open files, instead of
/// spinning on it.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves `router` on `listener` within `limits` until `shutdown` resolves, then stops taking
/// connections, closes those with no request under way, and returns once the others have
/// finished. Each connection has `TCP_NODELAY`: a stream's events are small writes, and
/// Nagle's algorithm would hold each one back until the client acknowledged the one before.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.client_timeout);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(s) => s,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    tracing::debug!("accept failed: {e}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set on a connection: {e}");
        }
        let mut io = TimeoutStream::new(tcp);
        io.set_write_timeout(Some(limits.client_timeout));
        let service = TowerToHyperService::new(router.clone());
        let conn = graceful.watch(http.serve_connection(TokioIo::new(Box::pin(io)), service));
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("connection ended: {e}");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
