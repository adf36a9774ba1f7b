//! Tests for the config file: its shape, reading it, and resolving it into settings.

use super::file::without_strings;
use super::*;
use crate::cache::CacheLocation;
use crate::llm::registry::Environment;
use crate::vocab::Require;
use std::path::Path;
use std::time::Duration;

#[test]
fn a_full_file_parses() {
    let c = Config::parse(
        "default_adapter = \"glm-payg\"\nfallback = [\"openai-payg\", \"glm-payg\"]\n[timeouts]\nrequest_s = 30\n[adapters.openai-payg]\nmodel = \"gpt-5.5\"\nbase_url = \"http://127.0.0.1:1\"\n",
        "geode.toml",
    )
    .unwrap();
    assert_eq!(c.default_adapter.as_deref(), Some("glm-payg"));
    assert_eq!(c.fallback.len(), 2);
    assert_eq!(c.timeouts.request_s, Some(30.0));
    assert_eq!(c.adapter_settings().model("openai-payg", None), "gpt-5.5");
    assert_eq!(c.adapter_settings().model("openai-payg", Some("o3")), "o3");
}

#[test]
fn repair_is_off_unless_the_file_asks_and_must_be_a_boolean() {
    assert!(!Config::default().repair);
    assert!(!Config::parse("", "geode.toml").unwrap().repair);
    assert!(
        Config::parse("repair = true\n", "geode.toml")
            .unwrap()
            .repair
    );
    let bad = Config::parse("repair = \"yes\"\n", "geode.toml").unwrap_err();
    assert!(bad.to_string().contains("line 1"), "{bad}");
}

#[test]
fn the_gateway_table_holds_a_policy_and_aliases_and_refuses_what_it_does_not_know() {
    let c = Config::parse(
        "[gateway]\nrequire = \"wired\"\n[gateway.models.fast]\nadapter = \"openai-payg\"\nmodel = \"gpt-5-mini\"\nfallback = [\"glm-payg\"]\n",
        "geode.toml",
    )
    .unwrap();
    assert_eq!(c.gateway.require, Require::Wired);
    let fast = &c.gateway.models["fast"];
    assert_eq!(
        (fast.adapter.as_str(), fast.model.as_str()),
        ("openai-payg", "gpt-5-mini")
    );
    assert_eq!(fast.fallback, ["glm-payg"]);
    for (text, needle) in [
        (
            "[gateway.models.x]\nadapter = \"nope\"\n",
            "[gateway.models]",
        ),
        (
            "[gateway.models.x]\nadapter = \"local\"\nfallback = [\"nope\"]\n",
            "nope",
        ),
        ("[gateway]\nrequire = \"strict\"\n", "strict"),
        ("[gateway]\nlisten = \"0.0.0.0:1\"\n", "listen"),
        ("[gateway.models.x]\nmodel = \"m\"\n", "adapter"),
    ] {
        let err = Config::parse(text, "geode.toml").unwrap_err().to_string();
        assert!(err.contains(needle), "{text}: {err}");
    }
}

#[test]
fn a_syntax_error_names_the_line() {
    let err = Config::parse("fallback = []\n\ndefault_adapter = = 3\n", "geode.toml").unwrap_err();
    match err {
        ConfigError::Invalid { line, .. } => assert_eq!(line, 3),
        other => panic!("{other}"),
    }
    let err = Config::parse("colour = \"blue\"\n", "geode.toml").unwrap_err();
    assert!(err.to_string().contains("line 1"), "{err}");
}

struct Vars(Vec<(&'static str, &'static str)>);

impl Environment for Vars {
    fn var(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned())
    }
    fn file_exists(&self, _: &Path) -> bool {
        false
    }
    fn on_path(&self, _: &str) -> bool {
        false
    }
}

#[test]
fn max_response_bytes_is_env_then_file_then_sixteen_mib() {
    let none = Vars(vec![]);
    let env = Vars(vec![(MAX_RESPONSE_BYTES_ENV, " 2048 ")]);
    let budget = |c: &Config, env: &Vars| c.settings(env).map(|s| s.routing.max_response_bytes);
    assert_eq!(budget(&Config::default(), &none).unwrap(), 16 * 1024 * 1024);
    let file = Config::parse("[limits]\nmax_response_bytes = 4096\n", "g.toml").unwrap();
    assert_eq!(budget(&file, &none).unwrap(), 4096);
    assert_eq!(budget(&file, &env).unwrap(), 2048);
}

#[test]
fn a_zero_or_non_numeric_response_budget_is_refused() {
    let err = Config::parse("[limits]\nmax_response_bytes = 0\n", "g.toml").unwrap_err();
    assert!(matches!(err, ConfigError::Invalid { line: 2, .. }), "{err}");
    let err = Config::parse("[limits]\nmax_response_bytes = -5\n", "g.toml").unwrap_err();
    assert!(matches!(err, ConfigError::Invalid { line: 2, .. }), "{err}");
    for bad in ["0", "lots", "-1", "1.5"] {
        let env = Vars(vec![(MAX_RESPONSE_BYTES_ENV, bad)]);
        let err = Config::default().settings(&env).unwrap_err();
        assert!(err.to_string().contains(MAX_RESPONSE_BYTES_ENV), "{err}");
    }
}

#[test]
fn pass_env_names_variables_for_a_cli_adapter() {
    let c = Config::parse(
        "[adapters.codex-cli]\npass_env = [\"MY_KEY\", \"_OTHER2\"]\n[adapters.claude-cli]\nmodel = \"m\"\n",
        "geode.toml",
    )
    .unwrap();
    let s = c.adapter_settings();
    assert_eq!(s.pass_env("codex-cli"), ["MY_KEY", "_OTHER2"]);
    assert!(s.pass_env("claude-cli").is_empty());
    assert!(s.pass_env("openai-payg").is_empty());
}

#[test]
fn a_pass_env_value_or_a_non_cli_adapter_is_refused_without_echoing_it() {
    let err = Config::parse(
        "[adapters.claude-cli]\npass_env = [\"OK\", \"ANTHROPIC_API_KEY=sk-ant-secret\"]\n",
        "geode.toml",
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ConfigError::PassEnv { .. }), "{err:?}");
    assert!(
        text.contains("entry 2") && text.contains("claude-cli"),
        "{text}"
    );
    assert!(!text.contains("sk-ant-secret"), "{text}");
    assert!(!format!("{err:?}").contains("sk-ant-secret"));
    for bad in ["\"\"", "\"1X\"", "\"A B\""] {
        let toml = format!("[adapters.codex-cli]\npass_env = [{bad}]\n");
        assert!(Config::parse(&toml, "g.toml").is_err(), "{bad}");
    }
    let err = Config::parse("[adapters.openai-payg]\npass_env = [\"X\"]\n", "g.toml").unwrap_err();
    assert!(err.to_string().contains("only the CLI adapters"), "{err}");
    let err = Config::parse("[adapters.codex-cli]\npass_env = \"X\"\n", "g.toml").unwrap_err();
    assert!(matches!(err, ConfigError::Invalid { line: 2, .. }), "{err}");
}

#[test]
fn a_wrong_type_never_echoes_a_string_value() {
    let err = Config::parse("[timeouts]\nrequest_s = \"sk-pasted-\\\"key\"\n", "g.toml")
        .unwrap_err()
        .to_string();
    assert!(!err.contains("sk-pasted"), "{err}");
    assert!(err.contains("line 2") && err.contains("a string"), "{err}");
    assert_eq!(
        without_strings(r#"invalid type: string "a\"b", expected f64; string "c""#),
        "invalid type: a string, expected f64; a string"
    );
}

#[test]
fn bad_settings_name_their_key() {
    for (text, key) in [
        ("[timeouts]\nrequest_s = nan\n", "[timeouts] request_s"),
        ("[timeouts]\nrequest_s = -inf\n", "[timeouts] request_s"),
        (
            "[adapters.glm-payg]\nmodel = \" \"\n",
            "[adapters.glm-payg] model",
        ),
        (
            "[adapters.glm-payg]\nbase_url = \"not a url\"\n",
            "[adapters.glm-payg] base_url",
        ),
        (
            "[adapters.glm-payg]\nbase_url = \"http://u:pw-secret@h/v1\"\n",
            "[adapters.glm-payg] base_url",
        ),
    ] {
        let err = Config::parse(text, "g.toml").unwrap_err();
        assert!(
            matches!(err, ConfigError::Setting { .. }),
            "{text}: {err:?}"
        );
        let err = err.to_string();
        assert!(err.contains(key), "{text}: {err}");
        assert!(!err.contains("pw-secret"), "{err}");
    }
}

#[test]
fn unknown_adapters_are_refused() {
    let err = Config::parse("fallback = [\"openai-payg\", \"gpt-chat\"]", "g.toml").unwrap_err();
    assert!(err.to_string().contains("gpt-chat"), "{err}");
}

#[test]
fn geode_toml_takes_a_gateway_store_table_and_refuses_a_bad_one() {
    let c = Config::parse("", "geode.toml").unwrap();
    assert!(c.gateway.store.enabled, "on unless the file says otherwise");
    assert_eq!(c.gateway.store, GatewayStoreConfig::default());
    let c = Config::parse(
        "[gateway.store]\ndir = \"s\"\nmax_age = \"2d\"\nmax_entries = 7\nmax_bytes = 4096\nenabled = false\n",
        "geode.toml",
    )
    .unwrap();
    let store = &c.gateway.store;
    assert_eq!(store.dir.as_deref(), Some(Path::new("s")));
    assert_eq!(
        store.max_age.as_ref().unwrap().duration().unwrap(),
        Duration::from_secs(2 * 86_400)
    );
    assert_eq!(store.max_entries.map(|n| n.get()), Some(7));
    assert_eq!(store.max_bytes.map(|n| n.get()), Some(4096));
    assert!(!store.enabled);
    let c = Config::parse(
        "[gateway.store]\nurl = \"redis://127.0.0.1:6379/r\"\nmax_age = 60\n",
        "geode.toml",
    )
    .unwrap();
    assert_eq!(
        c.settings(&Vars(vec![])).unwrap().gateway.store,
        c.gateway.store
    );
    for (bad, key) in [
        (
            "[gateway.store]\ndir = \"s\"\nurl = \"redis://h:1/r\"\n",
            "[gateway.store]",
        ),
        ("[gateway.store]\nurl = \"s\"\n", "[gateway.store] url"),
        (
            "[gateway.store]\nmax_age = \"soon\"\n",
            "[gateway.store] max_age",
        ),
        ("[gateway.store]\nmax_age = 0\n", "[gateway.store] max_age"),
        ("[gateway.store]\nmax_entries = 0\n", "line 2, column 15"),
        ("[gateway.store]\nsize = 3\n", "size"),
    ] {
        let e = Config::parse(bad, "geode.toml").unwrap_err().to_string();
        assert!(e.contains(key), "{bad}: {e}");
    }
}

#[test]
fn geode_toml_takes_a_cache_table_and_refuses_a_bad_one() {
    let c = Config::parse("[cache]\ndir = \"c\"\nttl = \"1h\"\n", "geode.toml").unwrap();
    assert_eq!(c.cache.dir.as_deref(), Some(Path::new("c")));
    assert_eq!(
        c.cache.ttl.unwrap().duration().unwrap(),
        Duration::from_secs(3600)
    );
    let c = Config::parse(
        "[cache]\nurl = \"redis://127.0.0.1:6379/t\"\nttl = 60\n",
        "geode.toml",
    )
    .unwrap();
    assert_eq!(
        c.cache.ttl.unwrap().duration().unwrap(),
        Duration::from_secs(60)
    );
    for bad in [
        "[cache]\ndir = \"c\"\nurl = \"redis://h:1\"\n",
        "[cache]\nurl = \"c\"\n",
        "[cache]\nttl = \"soon\"\n",
        "[cache]\nttl = 0\n",
        "[cache]\nsize = 3\n",
    ] {
        assert!(Config::parse(bad, "geode.toml").is_err(), "{bad}");
    }
    let none = Vars(vec![]);
    assert_eq!(Config::default().settings(&none).unwrap().cache, None);
    let c = Config::parse("[cache]\ndir = \"c\"\nttl = \"1h\"\n", "geode.toml").unwrap();
    let cache = c.settings(&none).unwrap().cache.unwrap();
    assert_eq!(cache.location, CacheLocation::Dir("c".into()));
    assert_eq!(cache.ttl, Some(Duration::from_secs(3600)));
}
