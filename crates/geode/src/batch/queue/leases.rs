//! The leases of the tasks a worker holds, renewed on a thread of their own.
//!
//! A task's lease is renewed by re-claiming its entry (`XCLAIM ... JUSTID` resets its idle
//! time). Renewing from the runtime that runs the tasks failed under load: a task that keeps a
//! runtime thread busy (a 20 MB prompt parsed in a debug build, a CPU-heavy validation) starves
//! the renewal, the lease runs out, and another worker runs the same task again (the provider
//! paid twice, tools run twice). So the keeper has its own OS thread, its own single-threaded
//! runtime and its own connection: however busy the tasks' runtime is, every held entry is
//! re-claimed each third of a lease.

use super::GROUP;
use crate::redis::{RedisUrl, manager_config};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The held entries, and the keeper thread that renews them until dropped.
pub(super) struct Leases {
    held: Arc<Mutex<HashSet<String>>>,
    stop: tokio_util::sync::CancellationToken,
}

impl Leases {
    /// Starts the keeper for consumer `me` of `url`'s tasks, renewing every `lease / 3`.
    pub(super) fn start(url: &RedisUrl, me: &str, lease: Duration) -> Self {
        let held: Arc<Mutex<HashSet<String>>> = Arc::default();
        let stop = tokio_util::sync::CancellationToken::new();
        let (url, me, ids, done) = (url.clone(), me.to_owned(), held.clone(), stop.clone());
        let keeper = std::thread::Builder::new()
            .name("geode-leases".to_owned())
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    tracing::warn!("the lease keeper could not start; leases are not renewed");
                    return;
                };
                rt.block_on(keep(url, me, lease, ids, done));
            });
        if let Err(e) = keeper {
            tracing::warn!("the lease keeper could not start ({e}); leases are not renewed");
        }
        Self { held, stop }
    }

    /// Renews `entry` from now on, until [`Self::release`].
    pub(super) fn hold(&self, entry: &str) {
        self.lock().insert(entry.to_owned());
    }

    /// Stops renewing `entry`.
    pub(super) fn release(&self, entry: &str) {
        self.lock().remove(entry);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Leases {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Every `lease / 3`, re-claims every held entry for `me`, in one command.
async fn keep(
    url: RedisUrl,
    me: String,
    lease: Duration,
    held: Arc<Mutex<HashSet<String>>>,
    stop: tokio_util::sync::CancellationToken,
) {
    let mut conn = None;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(lease / 3) => {}
        }
        let ids: Vec<String> = held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect();
        if ids.is_empty() {
            continue;
        }
        if conn.is_none() {
            let made = async {
                let client = redis::Client::open(url.server.as_str())?;
                redis::aio::ConnectionManager::new_with_config(client, manager_config()).await
            };
            match tokio::time::timeout(lease / 3, made).await {
                Ok(Ok(c)) => conn = Some(c),
                _ => continue,
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        let mut claim = redis::cmd("XCLAIM");
        claim.arg(url.key("tasks")).arg(GROUP).arg(&me).arg(0);
        for id in &ids {
            claim.arg(id);
        }
        claim.arg("JUSTID");
        let renewed = tokio::time::timeout(lease / 3, claim.query_async::<redis::Value>(c)).await;
        if !matches!(renewed, Ok(Ok(_))) {
            tracing::debug!("a lease renewal failed; the next one tries again");
        }
    }
}
