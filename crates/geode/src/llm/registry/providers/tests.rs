use super::*;

fn table(toml: &str) -> ProviderConfig {
    toml::from_str(toml).unwrap()
}

const ROUTER: &str = r#"
wire = "chat"
base_url = "https://router.example/api/v1"
key_env = "ROUTER_KEY"
headers = { "X-Title" = "geode" }
model = "vendor/model-1"
schema = "json_schema"
"#;

#[test]
fn a_chat_table_is_a_row_on_the_openai_chat_shape() {
    let row = table(ROUTER).spec("router").unwrap();
    assert_eq!(row.name, "router");
    assert_eq!(row.wire_family, WireFamily::Chat(ChatTools::OPENAI));
    assert_eq!(row.schema_route, SchemaRoute::DeclaredJsonSchema);
    assert_eq!(
        row.auth,
        Auth::ApiKey {
            env: "ROUTER_KEY",
            header: KeyHeader::Bearer
        }
    );
    let e = row.endpoint.unwrap();
    assert_eq!(
        (e.path, e.default_base, e.base_env),
        (
            "/chat/completions",
            "https://router.example/api/v1",
            "GEODE_ROUTER_BASE_URL"
        )
    );
    assert_eq!(row.headers, [("x-title", "geode")]);
    assert_eq!(row.default_model, "vendor/model-1");
}

#[test]
fn the_same_table_is_one_row() {
    let a = table(ROUTER).spec("router").unwrap();
    let b = table(ROUTER).spec("router").unwrap();
    assert!(std::ptr::eq(a, b));
    let other = table(&ROUTER.replace("model-1", "model-2"))
        .spec("router")
        .unwrap();
    assert!(!std::ptr::eq(a, other));
}

#[test]
fn each_schema_setting_has_its_schema_route_and_each_wire_its_defaults() {
    let base = "base_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\n";
    for (wire, schema, rule) in [
        ("chat", None, SchemaRoute::Probed),
        ("chat", Some("probe"), SchemaRoute::Probed),
        ("chat", Some("json_object"), SchemaRoute::JsonObject),
        ("chat", Some("prompt"), SchemaRoute::Prompt),
        ("responses", None, SchemaRoute::OpenAiStrict),
        (
            "messages",
            Some("json_schema"),
            SchemaRoute::AnthropicLadder,
        ),
    ] {
        let schema = schema.map_or(String::new(), |s| format!("schema = \"{s}\"\n"));
        let t = table(&format!("wire = \"{wire}\"\n{base}{schema}"));
        let row = t.spec("p").unwrap();
        assert_eq!(row.schema_route, rule, "{wire} {schema}");
        assert_eq!(row.auth, Auth::None, "no key_env: no credentials");
    }
    let messages = table(&format!("wire = \"messages\"\nkey_env = \"K\"\n{base}"));
    let row = messages.spec("m").unwrap();
    assert_eq!(
        (row.wire_family, row.endpoint.unwrap().path),
        (WireFamily::Messages, "/messages")
    );
    assert!(matches!(
        row.auth,
        Auth::ApiKey {
            header: KeyHeader::XApiKey,
            ..
        }
    ));
}

fn refusal(toml: &str, name: &str) -> ProviderError {
    table(toml).spec(name).unwrap_err()
}

#[test]
fn a_bad_setting_names_its_key() {
    let ok = "wire = \"chat\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\n";
    for (toml, name, key) in [
        (ok.to_owned(), "Bad_Name", "name"),
        (ok.to_owned(), "openai-payg", "name"),
        (
            ok.replace("http://127.0.0.1:1/v1", "not a url"),
            "p",
            "base_url",
        ),
        (ok.replace("http://", "ftp://"), "p", "base_url"),
        (ok.replace("\"m\"", "\" \""), "p", "model"),
        (format!("{ok}key_env = \"sk-live-123\"\n"), "p", "key_env"),
        (
            format!("{ok}headers = {{ \"bad name\" = \"v\" }}\n"),
            "p",
            "headers",
        ),
        (
            ok.replace("chat", "messages") + "schema = \"json_object\"\n",
            "p",
            "schema",
        ),
        (
            ok.replace("chat", "responses") + "schema = \"probe\"\n",
            "p",
            "schema",
        ),
    ] {
        let err = refusal(&toml, name);
        assert_eq!(err.key, key, "{toml}: {err}");
        assert!(
            err.to_string()
                .starts_with(&format!("[providers.{name}] {key}:")),
            "{err}"
        );
    }
}

#[test]
fn a_credential_in_the_file_is_refused_without_echoing_it() {
    let ok = "wire = \"chat\"\nmodel = \"m\"\n";
    let secret = "sk-or-v1-Qm9SeCrEt";
    for toml in [
        format!("{ok}base_url = \"https://user:{secret}@router.example/v1\"\n"),
        format!(
            "{ok}base_url = \"https://router.example/v1\"\nheaders = {{ Authorization = \"Bearer {secret}\" }}\n"
        ),
        format!(
            "{ok}base_url = \"https://router.example/v1\"\nheaders = {{ \"X-Note\" = \"{secret}\\n\" }}\n"
        ),
    ] {
        let err = refusal(&toml, "p");
        assert!(!err.to_string().contains(secret), "{err}");
        assert!(!format!("{err:?}").contains(secret), "{err:?}");
    }
}

#[test]
fn unknown_keys_and_values_are_refused_by_name() {
    let err = toml::from_str::<ProviderConfig>(
        "wire = \"chat\"\nbase_url = \"http://h/v1\"\nmodel = \"m\"\napi_key = \"x\"\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("api_key"), "{err}");
    let err = toml::from_str::<ProviderConfig>(
        "wire = \"grpc\"\nbase_url = \"http://h/v1\"\nmodel = \"m\"\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("grpc"), "{err}");
}
