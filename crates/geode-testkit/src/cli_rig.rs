//! What the real-CLI tests (`cli_claude.rs`, `cli_codex.rs`) share: a fake provider, a temp
//! HOME holding a `work` directory, the adapter's CLI options pointed at both, the model calls
//! the fake saw, cancelling or dropping a call mid-flight, the checks that nothing outlives a
//! call, and the pinned-version check. The tests run inside the loopback-only namespace of
//! `cli_support`; the fault matrix uses [`codex_fake_provider`] too.

use super::leaks;
use geode::llm::adapter::Adapter;
use geode::llm::adapters::cli_common::CliOptions;
use geode::llm::call::{AdapterError, CallCx};
use geode::llm::request::{AdapterCallRequest, AdapterResponse};
use geode::schema::ResponseSchema;
use geode_fakes::{FakeServer, Kind, RecordedRequest, Script};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A fake of one kind, a temp HOME (with `work/`) for one CLI, and the adapter running it.
pub struct CliRig<A> {
    /// The fake provider the CLI talks to.
    pub server: FakeServer,
    /// The CLI's HOME; its path marks the CLI's processes.
    pub home: tempfile::TempDir,
    /// The adapter under test.
    pub adapter: A,
}

/// What a [`CliRig`]'s adapter is built from: the fake and the HOME.
pub struct CliHome<'a> {
    /// The fake provider.
    pub server: &'a FakeServer,
    /// The HOME directory (holding `work/`).
    pub home: &'a Path,
}

impl CliHome<'_> {
    /// Options running `bin` with this HOME, in `work/`, within `timeout`.
    pub fn options(&self, bin: PathBuf, timeout: Duration) -> CliOptions {
        let mut cli = CliOptions::with_timeout(timeout).env("HOME", self.home);
        cli.bin = Some(bin);
        cli.cwd = Some(self.home.join("work"));
        cli
    }

    /// A directory under HOME, created.
    pub fn dir(&self, name: &str) -> PathBuf {
        let dir = self.home.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}

impl<A: Adapter> CliRig<A> {
    /// A fake of `kind` playing `script`, a fresh HOME with a `work` directory, and the adapter
    /// `make` builds for them.
    pub async fn start(kind: Kind, script: Script, make: impl FnOnce(&CliHome<'_>) -> A) -> Self {
        let server = FakeServer::start(kind, script).await.unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("work")).unwrap();
        let adapter = make(&CliHome {
            server: &server,
            home: home.path(),
        });
        CliRig {
            server,
            home,
            adapter,
        }
    }

    /// Calls the adapter with `req`.
    pub async fn call_with(
        &self,
        req: AdapterCallRequest,
    ) -> Result<AdapterResponse, AdapterError> {
        self.adapter.call(req, &CallCx::new()).await
    }

    /// The entries of the directory `name` under HOME.
    pub fn files_in(&self, name: &str) -> Vec<String> {
        std::fs::read_dir(self.home.path().join(name))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// The model calls the fake received (`POST` on its model route).
    pub fn model_requests(&self) -> Vec<RecordedRequest> {
        let path = self.server.kind().model_path();
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.route() == path)
            .collect()
    }

    /// The bodies of [`CliRig::model_requests`].
    pub fn model_calls(&self) -> Vec<Value> {
        self.model_requests().into_iter().map(|r| r.body).collect()
    }

    /// Fails when a process of this HOME is still alive (after a settling wait).
    pub async fn assert_no_process_left(&self) {
        let marker = format!("HOME={}", self.home.path().display());
        let left = leaks::settle(|| leaks::processes_with_env(&marker)).await;
        assert_eq!(left, Vec::<u32>::new(), "CLI processes left behind");
    }

    /// Calls the adapter with `req` and cancels once the fake has seen the model call (the fake
    /// must hang); `mid_call` runs just before the cancel. The call must end `Cancelled`.
    pub async fn cancel_mid_call(&self, req: AdapterCallRequest, mid_call: impl FnOnce()) {
        let cx = CallCx::new();
        let token = cx.cancel.clone();
        let seen = async {
            self.wait_for_model_call().await;
            mid_call();
            token.cancel();
        };
        let (result, ()) = tokio::join!(self.adapter.call(req, &cx), seen);
        assert!(
            matches!(result, Err(AdapterError::Cancelled { .. })),
            "{result:?}"
        );
    }

    /// Drops a call once the fake has seen its model call (the fake must hang); exactly one
    /// model call was made.
    pub async fn drop_mid_call(&self, req: AdapterCallRequest) {
        let cx = CallCx::new();
        tokio::select! {
            r = self.adapter.call(req, &cx) => panic!("the call should still be hanging: {r:?}"),
            () = self.wait_for_model_call() => {}
        }
        assert_eq!(self.model_requests().len(), 1);
    }

    /// Waits (bounded by the test body's bound) until the fake has seen a model call.
    async fn wait_for_model_call(&self) {
        while self.model_requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// `codex -c` overrides naming the fake at `base_url` as the model provider, its key read from
/// `key_var`, with codex's own retries off.
pub fn codex_fake_provider(base_url: &str, key_var: &str) -> Vec<(String, String)> {
    let entry = |k: &str, v: String| (format!("model_providers.fake.{k}"), v);
    vec![
        ("model_provider".into(), "\"fake\"".into()),
        entry("name", "\"Fake\"".into()),
        entry("base_url", format!("\"{base_url}/v1\"")),
        entry("wire_api", "\"responses\"".into()),
        entry("env_key", format!("\"{key_var}\"")),
        entry("request_max_retries", "0".into()),
        entry("stream_max_retries", "0".into()),
    ]
}

/// An object schema with a string `answer` and a required `extra` of JSON type `ty`.
pub fn answer_schema(extra: &str, ty: &str) -> ResponseSchema {
    ResponseSchema::from_value(json!({
        "type": "object",
        "properties": {"answer": {"type": "string"}, extra: {"type": ty}},
        "required": ["answer", extra],
        "additionalProperties": false
    }))
    .unwrap()
}

/// Fails unless `bin --version` prints `version`.
pub fn assert_version(bin: &Path, version: &str) {
    let out = std::process::Command::new(bin)
        .arg("--version")
        .env("DISABLE_AUTOUPDATER", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(version),
        "unexpected {} version: {text}",
        bin.display()
    );
}
