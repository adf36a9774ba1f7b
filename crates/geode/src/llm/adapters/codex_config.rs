//! The environment variables a user's `codex` configuration names, so that `codex-cli` passes
//! them to the CLI (which otherwise starts with a cleared environment and fails with
//! "Missing environment variable: `X`").
//!
//! Read from `$CODEX_HOME/config.toml` (`CODEX_HOME` defaults to `~/.codex`; an explicit
//! [`CliOptions::env`] value wins over the parent's), with the adapter's `-c key=value` overrides
//! applied on top as codex does (a value that is not TOML is a string). Every
//! `[model_providers.<id>]` table contributes:
//!
//! | key | names |
//! |---|---|
//! | `env_key = "X"` | `X` (the API key, sent as a bearer token) |
//! | `env_http_headers = { "Header" = "X" }` | every `X` (header values) |
//!
//! A missing, unreadable or invalid file names nothing (codex reports an invalid file itself).
//! Only names are read and returned, never values; names that are not portable variable names
//! ([`crate::llm::registry::is_env_name`]) are dropped.

use super::cli_common::CliOptions;
use crate::llm::registry::is_env_name;
use std::path::PathBuf;
use toml::{Table, Value};

/// The config file codex reads: `$CODEX_HOME/config.toml`, else `$HOME/.codex/config.toml`, as
/// the CLI will see `CODEX_HOME` and `HOME`. `None` when neither is known.
pub fn config_path(cli: &CliOptions) -> Option<PathBuf> {
    let home = cli
        .var("CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| cli.var("HOME").map(|h| PathBuf::from(h).join(".codex")))?;
    Some(home.join("config.toml"))
}

/// The variable names named by `config_text` (the file, if any) with `overrides` applied,
/// provider by provider (in provider-id order), without duplicates.
pub fn env_names(config_text: Option<&str>, overrides: &[(String, String)]) -> Vec<String> {
    let mut table = config_text
        .and_then(|t| t.parse::<Table>().ok())
        .unwrap_or_default();
    for (key, value) in overrides {
        apply_override(&mut table, key, value);
    }
    let mut names: Vec<String> = Vec::new();
    let providers = table.get("model_providers").and_then(Value::as_table);
    for provider in providers.into_iter().flat_map(Table::values) {
        let Some(provider) = provider.as_table() else {
            continue;
        };
        let key = provider.get("env_key").and_then(Value::as_str);
        let headers = provider
            .get("env_http_headers")
            .and_then(Value::as_table)
            .into_iter()
            .flat_map(Table::values)
            .filter_map(Value::as_str);
        for name in key.into_iter().chain(headers) {
            if is_env_name(name) && !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
        }
    }
    names
}

/// Reads the config file of `cli` (when there is one) and returns [`env_names`].
pub async fn read_env_names(cli: &CliOptions, overrides: &[(String, String)]) -> Vec<String> {
    let text = match config_path(cli) {
        Some(path) => tokio::fs::read_to_string(path).await.ok(),
        None => None,
    };
    env_names(text.as_deref(), overrides)
}

/// Sets the dotted `key` to `value` (TOML, else a string), as `codex -c key=value` does.
fn apply_override(table: &mut Table, key: &str, value: &str) {
    let parsed = format!("v = {value}")
        .parse::<Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(value.to_owned()));
    let mut parts: Vec<&str> = key.split('.').map(str::trim).collect();
    let Some(last) = parts.pop() else { return };
    let mut cur = table;
    for part in parts {
        let entry = cur
            .entry(part.to_owned())
            .or_insert_with(|| Value::Table(Table::new()));
        if !entry.is_table() {
            *entry = Value::Table(Table::new());
        }
        let Value::Table(next) = entry else { return };
        cur = next;
    }
    cur.insert(last.to_owned(), parsed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const CONFIG: &str = r#"
model = "m"
model_provider = "x"

[model_providers.x]
name = "X"
base_url = "http://127.0.0.1:1/v1"
env_key = "MY_KEY"
env_http_headers = { "x-tenant" = "MY_TENANT", "x-org" = "MY_KEY" }

[model_providers.y]
env_key = "Y_KEY"

[profiles.p]
model_provider = "y"
"#;

    #[test]
    fn env_key_and_header_variables_of_every_provider_are_named_once() {
        assert_eq!(
            env_names(Some(CONFIG), &[]),
            ["MY_KEY", "MY_TENANT", "Y_KEY"]
        );
    }

    #[test]
    fn overrides_add_and_replace_like_codex_does() {
        let o = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let names = env_names(
            Some(CONFIG),
            &[
                o("model_providers.y.env_key", "\"Y_OTHER\""),
                o("model_providers.fake.env_key", "FAKE_KEY"),
                o("model_providers.z", "{ env_key = \"Z_KEY\" }"),
            ],
        );
        assert_eq!(
            names,
            ["FAKE_KEY", "MY_KEY", "MY_TENANT", "Y_OTHER", "Z_KEY"]
        );
        assert_eq!(
            env_names(None, &[o("model_providers.f.env_key", "\"F\"")]),
            ["F"]
        );
    }

    #[test]
    fn invalid_files_and_names_name_nothing() {
        assert!(env_names(Some("model_providers = ["), &[]).is_empty());
        assert!(env_names(Some("model_providers = 3"), &[]).is_empty());
        assert!(env_names(Some("[model_providers.x]\nenv_key = 5\n"), &[]).is_empty());
        let bad =
            "[model_providers.x]\nenv_key = \"sk-live key\"\nenv_http_headers = { h = \"A=B\" }\n";
        assert!(env_names(Some(bad), &[]).is_empty());
        assert!(env_names(None, &[]).is_empty());
    }

    #[test]
    fn the_file_is_under_codex_home_else_under_home() {
        let cli = CliOptions::with_timeout(Duration::from_secs(1))
            .env("CODEX_HOME", "/ch")
            .env("HOME", "/h");
        assert_eq!(config_path(&cli), Some(PathBuf::from("/ch/config.toml")));
        let cli = CliOptions::with_timeout(Duration::from_secs(1))
            .env("CODEX_HOME", "")
            .env("HOME", "/h");
        assert_eq!(
            config_path(&cli),
            Some(PathBuf::from("/h/.codex/config.toml"))
        );
    }

    #[tokio::test]
    async fn the_file_is_read_from_codex_home() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), CONFIG).unwrap();
        let cli = CliOptions::with_timeout(Duration::from_secs(1)).env("CODEX_HOME", dir.path());
        assert_eq!(
            read_env_names(&cli, &[]).await,
            ["MY_KEY", "MY_TENANT", "Y_KEY"]
        );
        let empty = tempfile::tempdir().unwrap();
        let cli = CliOptions::with_timeout(Duration::from_secs(1)).env("CODEX_HOME", empty.path());
        assert!(read_env_names(&cli, &[]).await.is_empty());
    }
}
