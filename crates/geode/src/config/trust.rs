//! Trust in a project's `geode.toml`. A file in the working directory comes with whatever was
//! cloned or unpacked there: it may choose adapters, models, limits and local servers freely, but
//! it may not send the user's credentials to a host of its own choosing unless the user trusted
//! that file as it is now (`geode config trust`, as direnv's `allow`): a changed file asks again.
//!
//! The settings that need trust ([`untrusted_choices`]), one list for every path that loads a
//! project file:
//!
//! | setting | why |
//! |---|---|
//! | `[adapters.NAME] base_url` of an adapter that signs its requests (a key, an OAuth login), off its default origin (scheme, host and port: `http://api.openai.com` is not `https://api.openai.com`) | the credential would go where the file chose, or in clear |
//! | `[providers.NAME]` with a `key_env` | the file names both the variable and the host |
//! | `[cache] dir`, `[cache] url` | answers would be read from where the file chose: a repository could ship entries that claim any guarantee |
//! | `[gateway.store] dir`, `[gateway.store] url` | the gateway's stored conversations would be written where the file chose (a Redis of its own), or read from there (a repository could ship a context that every `previous_response_id` continues) |
//!
//! A loopback host is exempt from the first two: the key stays on this machine. The user's own
//! config (`~/.config/geode/config.toml`), the environment and flags are the user's, and never
//! checked.
//!
//! Trusted files are kept in `${XDG_CONFIG_HOME:-~/.config}/geode/trusted-configs`, one line
//! per file: the SHA-256 of its text and its canonical path. A relative `XDG_CONFIG_HOME` is
//! ignored (the XDG rule: a repository's directory could otherwise hold the list that trusts
//! it), a list that others may write trusts nothing, and a path that holds a line break is
//! never trusted (it would write a line of its own into the list).

use super::Config;
use crate::digest::sha256_hex;
use crate::llm::registry::{Auth, Environment, user_config_dir};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The trust list's file name, in geode's user config directory.
pub const TRUST_FILE: &str = "trusted-configs";

/// The largest trust list read: far beyond any real list, and a bound on a planted one.
const MAX_TRUST_BYTES: u64 = 1 << 20;

/// The settings of `cfg` that only a trusted project file may choose, as keys
/// (`[adapters.openai-payg] base_url`, `[cache] dir`); empty when there are none.
pub fn untrusted_choices(cfg: &Config) -> Vec<String> {
    let mut found = Vec::new();
    for (name, adapter) in &cfg.adapters {
        let (Some(base), Some(spec)) = (&adapter.base_url, cfg.spec(name)) else {
            continue;
        };
        let signs = !matches!(
            spec.auth,
            Auth::None | Auth::Binary { .. } | Auth::ModelFile
        );
        let default = spec.endpoint.map(|e| e.default_base).unwrap_or_default();
        if signs && !is_loopback(base) && origin(base) != origin(default) {
            found.push(format!("[adapters.{name}] base_url"));
        }
    }
    for (name, provider) in &cfg.providers {
        if provider.key_env.is_some() && !is_loopback(&provider.base_url) {
            found.push(format!("[providers.{name}] key_env"));
        }
    }
    if cfg.cache.dir.is_some() {
        found.push("[cache] dir".to_owned());
    }
    if cfg.cache.url.is_some() {
        found.push("[cache] url".to_owned());
    }
    if cfg.gateway.store.dir.is_some() {
        found.push("[gateway.store] dir".to_owned());
    }
    if cfg.gateway.store.url.is_some() {
        found.push("[gateway.store] url".to_owned());
    }
    found
}

/// Scheme, host (lowercase) and port (the scheme's default when none is written).
fn origin(url: &str) -> Option<(String, String, Option<u16>)> {
    let u = reqwest::Url::parse(url).ok()?;
    Some((
        u.scheme().to_owned(),
        u.host_str()?.to_ascii_lowercase(),
        u.port_or_known_default(),
    ))
}

fn host(url: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
}

fn is_loopback(url: &str) -> bool {
    let Some(host) = host(url) else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Why the trust list could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("trust list {path}: {source}")]
pub struct TrustError {
    /// The list's path.
    pub path: String,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

/// The user's list of trusted project files.
#[derive(Debug, Clone)]
pub struct TrustList {
    path: PathBuf,
}

impl TrustList {
    /// `<user config dir>/geode/trusted-configs` ([`user_config_dir`]; `None` without one).
    pub fn locate(env: &dyn Environment) -> Option<Self> {
        Some(Self {
            path: user_config_dir(env)?.join("geode").join(TRUST_FILE),
        })
    }

    /// Where the list lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `file`, holding `text`, was trusted as it is. A list that cannot be read, or
    /// that others may write, trusts nothing.
    pub fn trusts(&self, file: &Path, text: &str) -> bool {
        let Some(wanted) = entry(file, text) else {
            return false;
        };
        !self.writable_by_others()
            && self
                .read()
                .is_ok_and(|list| list.lines().any(|line| line == wanted))
    }

    fn writable_by_others(&self) -> bool {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(&self.path).is_ok_and(|m| m.permissions().mode() & 0o022 != 0)
    }

    /// Trusts `file` as it is now (holding `text`): its line replaces any earlier one for the
    /// same file. The list is rewritten whole, beside itself, then renamed into place, keeping
    /// its permissions (0600 when new).
    pub fn trust(&self, file: &Path, text: &str) -> Result<(), TrustError> {
        let fail = |source| TrustError {
            path: self.path.display().to_string(),
            source,
        };
        let Some(line) = entry(file, text) else {
            return Err(fail(std::io::Error::other(
                "a path holding a line break cannot be trusted",
            )));
        };
        if self.writable_by_others() {
            return Err(fail(std::io::Error::other(
                "the list is writable by others, who could trust anything (chmod go-w it)",
            )));
        }
        let path_part = &line[65..];
        let old = match self.read() {
            Ok(old) => old,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(fail(e)),
        };
        let mut kept: Vec<&str> = old
            .lines()
            .filter(|l| l.get(65..) != Some(path_part))
            .collect();
        kept.push(&line);
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(fail)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
        let mode = std::fs::metadata(&self.path).map_or(0o600, |m| {
            use std::os::unix::fs::PermissionsExt;
            m.permissions().mode()
        });
        {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(fail)?;
        }
        for l in kept {
            writeln!(tmp, "{l}").map_err(fail)?;
        }
        tmp.as_file().sync_all().map_err(fail)?;
        tmp.persist(&self.path).map_err(|e| fail(e.error))?;
        Ok(())
    }

    fn read(&self) -> std::io::Result<String> {
        use std::io::Read;
        let mut text = String::new();
        std::fs::File::open(&self.path)?
            .take(MAX_TRUST_BYTES)
            .read_to_string(&mut text)?;
        Ok(text)
    }
}

/// `<sha256 of text> <canonical path>`; `None` for a path with a line break, which would be
/// a line of its own in the list.
fn entry(file: &Path, text: &str) -> Option<String> {
    let path = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let shown = path.display().to_string();
    (!shown.contains(['\n', '\r'])).then(|| format!("{} {shown}", sha256_hex(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redirects(toml: &str) -> Vec<String> {
        untrusted_choices(&Config::parse(toml, "geode.toml").unwrap())
    }

    #[test]
    fn only_a_signed_request_sent_off_its_host_and_off_loopback_needs_trust() {
        assert_eq!(
            redirects("[adapters.openai-payg]\nbase_url = \"https://collector.example/v1\"\n"),
            vec!["[adapters.openai-payg] base_url"]
        );
        // Its own host, loopback in every spelling, and a model choice are the file's to make.
        for fine in [
            "[adapters.openai-payg]\nbase_url = \"https://API.openai.com/v2\"\n",
            "[adapters.anthropic-payg]\nbase_url = \"http://127.0.0.1:9/v1\"\n",
            "[adapters.glm-payg]\nbase_url = \"http://localhost:8080\"\n",
            "[adapters.openai-payg]\nbase_url = \"http://[::1]:8080\"\n",
            "[adapters.openai-payg]\nmodel = \"gpt-5-mini\"\n",
            "[providers.llama]\nwire = \"chat\"\nbase_url = \"https://llm.example/v1\"\nmodel = \"m\"\n",
            "[providers.mine]\nwire = \"chat\"\nbase_url = \"http://127.0.0.1:8080/v1\"\nkey_env = \"K\"\nmodel = \"m\"\n",
        ] {
            assert_eq!(redirects(fine), Vec::<String>::new(), "{fine}");
        }
        assert_eq!(
            redirects(
                "[providers.x]\nwire = \"chat\"\nbase_url = \"https://x.example/v1\"\nkey_env = \"OPENAI_API_KEY\"\nmodel = \"m\"\n"
            ),
            vec!["[providers.x] key_env"]
        );
        assert_eq!(
            redirects("[adapters.openai-compatible]\nbase_url = \"https://x.example/v1\"\n"),
            vec!["[adapters.openai-compatible] base_url"],
            "its optional key would go along"
        );
    }

    #[test]
    fn another_scheme_or_port_is_another_origin_and_a_cache_location_needs_trust_too() {
        for off in [
            "[adapters.openai-payg]\nbase_url = \"http://api.openai.com/v1\"\n",
            "[adapters.openai-payg]\nbase_url = \"https://api.openai.com:8443/v1\"\n",
        ] {
            assert_eq!(
                redirects(off),
                vec!["[adapters.openai-payg] base_url"],
                "{off}"
            );
        }
        assert_eq!(
            redirects("[adapters.openai-payg]\nbase_url = \"https://api.openai.com:443/v9\"\n"),
            Vec::<String>::new(),
            "the default port written out is the same origin"
        );
        assert_eq!(
            redirects("[cache]\ndir = \".geode-cache\"\n"),
            vec!["[cache] dir"]
        );
        assert_eq!(
            redirects("[cache]\nurl = \"redis://127.0.0.1:6379/x\"\n"),
            vec!["[cache] url"]
        );
        assert_eq!(redirects("[cache]\nttl = \"1h\"\n"), Vec::<String>::new());
    }

    #[test]
    fn a_gateway_store_location_needs_trust_and_its_bounds_do_not() {
        assert_eq!(
            redirects("[gateway.store]\ndir = \"planted\"\n"),
            vec!["[gateway.store] dir"]
        );
        assert_eq!(
            redirects("[gateway.store]\nurl = \"redis://127.0.0.1:6379/x\"\n"),
            vec!["[gateway.store] url"],
            "even on loopback: the conversations would go to a Redis the file chose"
        );
        for fine in [
            "[gateway.store]\nmax_age = \"1d\"\nmax_entries = 5\nmax_bytes = 4096\n",
            "[gateway.store]\nenabled = false\n",
        ] {
            assert_eq!(redirects(fine), Vec::<String>::new(), "{fine}");
        }
    }

    #[test]
    fn a_line_break_an_open_list_and_a_relative_config_home_trust_nothing() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let list = TrustList {
            path: home.path().join("geode").join(TRUST_FILE),
        };
        let project = tempfile::tempdir().unwrap();
        // A path whose name would write a second line: the trust of another file.
        let other = project.path().join("victim.toml");
        std::fs::write(&other, "v").unwrap();
        let injected = project
            .path()
            .join(format!("x\n{} {}", sha256_hex("v"), other.display()));
        std::fs::create_dir_all(&injected).unwrap();
        let file = injected.join("geode.toml");
        std::fs::write(&file, "a").unwrap();
        assert!(list.trust(&file, "a").is_err());
        assert!(!list.trusts(&other, "v"), "a line was injected");
        // A list others may write trusts nothing, and is not written.
        let fine = project.path().join("geode.toml");
        std::fs::write(&fine, "a").unwrap();
        list.trust(&fine, "a").unwrap();
        assert!(list.trusts(&fine, "a"));
        std::fs::set_permissions(list.path(), std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(!list.trusts(&fine, "a"));
        assert!(list.trust(&fine, "a").is_err());
        // A relative XDG_CONFIG_HOME is ignored: HOME's .config is used.
        struct Vars;
        impl Environment for Vars {
            fn var(&self, name: &str) -> Option<String> {
                match name {
                    "XDG_CONFIG_HOME" => Some(".".to_owned()),
                    "HOME" => Some("/home/u".to_owned()),
                    _ => None,
                }
            }
            fn file_exists(&self, _: &Path) -> bool {
                false
            }
            fn on_path(&self, _: &str) -> bool {
                false
            }
        }
        let env = Vars;
        assert_eq!(
            user_config_dir(&env),
            Some(PathBuf::from("/home/u/.config"))
        );
    }

    #[test]
    fn a_trusted_file_stays_trusted_until_it_changes_and_the_list_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let list = TrustList {
            path: home.path().join("geode").join(TRUST_FILE),
        };
        let project = tempfile::tempdir().unwrap();
        let file = project.path().join("geode.toml");
        std::fs::write(&file, "a").unwrap();
        assert!(!list.trusts(&file, "a"));
        list.trust(&file, "a").unwrap();
        assert!(list.trusts(&file, "a"));
        assert!(!list.trusts(&file, "b"), "a changed file asks again");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(list.path()), 0o600);
        std::fs::set_permissions(list.path(), std::fs::Permissions::from_mode(0o640)).unwrap();
        list.trust(&file, "b").unwrap();
        assert!(
            list.trusts(&file, "b") && !list.trusts(&file, "a"),
            "one line per file"
        );
        assert_eq!(
            std::fs::read_to_string(list.path())
                .unwrap()
                .lines()
                .count(),
            1
        );
        assert_eq!(
            mode(list.path()),
            0o640,
            "rewritten with its permissions kept"
        );
        let other = project.path().join("other.toml");
        std::fs::write(&other, "a").unwrap();
        list.trust(&other, "a").unwrap();
        assert!(list.trusts(&file, "b") && list.trusts(&other, "a"));
        let leftovers = std::fs::read_dir(list.path().parent().unwrap())
            .unwrap()
            .count();
        assert_eq!(leftovers, 1, "no temp file left beside the list");
    }
}
