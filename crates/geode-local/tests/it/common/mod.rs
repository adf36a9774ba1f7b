//! What the real-model test binaries share: the one engine of the process and the lock that keeps
//! their calls from interleaving.

use geode_local::LocalEngine;
use std::sync::Arc;
use tokio::sync::{Mutex, MutexGuard};

/// The shared engine; a missing model fails the test with the fetch instructions.
pub fn engine() -> Arc<LocalEngine> {
    match LocalEngine::shared() {
        Ok(engine) => engine,
        Err(e) => panic!("the local model is required for these tests: {e}"),
    }
}

/// Serialises the tests of one binary.
pub async fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::const_new(());
    LOCK.lock().await
}
