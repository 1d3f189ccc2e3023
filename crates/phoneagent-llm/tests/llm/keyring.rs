//! The OS keyring (SPEC P5) for real: gnome-keyring's Secret Service in a private D-Bus
//! session with a fresh HOME. The outer test starts `dbus-run-session`, unlocks a new keyring
//! and re-runs this test binary inside it for the `#[ignore]`d inner test, all under `timeout`.
//! It is skipped, with the reason printed, only when gnome-keyring-daemon is not installed.

use std::process::Command;

use phoneagent_llm::config::ModelsConfig;
use phoneagent_llm::{ApiKey, KeyStore, Role, RoleResolution};
use phoneagent_protocol::ErrorCode;

const INNER_ENV: &str = "PHONEAGENT_LLM_KEYRING_CHILD";

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn keyring_roundtrip_in_private_secret_service() {
    for tool in ["gnome-keyring-daemon", "dbus-run-session", "timeout"] {
        if !have(tool) {
            eprintln!(
                "SKIPPED keyring_roundtrip_in_private_secret_service: {tool} is not installed (apt-get install gnome-keyring dbus)"
            );
            return;
        }
    }
    let home = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let script = format!(
        "echo -n test-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1; exec '{}' keyring::inner_keyring_checks --exact --ignored --nocapture --test-threads=1",
        exe.display()
    );
    let out = Command::new("timeout")
        .args(["60", "dbus-run-session", "--", "sh", "-c", &script])
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_RUNTIME_DIR", home.path())
        .env(INNER_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "inner keyring test failed ({:?})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
}

#[test]
#[ignore = "runs inside the private D-Bus session started by keyring_roundtrip_in_private_secret_service"]
fn inner_keyring_checks() {
    assert_eq!(
        std::env::var(INNER_ENV).as_deref(),
        Ok("1"),
        "run through keyring_roundtrip_in_private_secret_service"
    );
    let store = KeyStore::new();
    let entry = "test.openai";
    assert_eq!(
        store.get(entry).unwrap().map(|k| k.expose().to_string()),
        None
    );
    assert!(!store.has(entry).unwrap());
    store
        .set(entry, &ApiKey::new("sk-live-ABCDEF123456"))
        .unwrap();
    assert!(store.has(entry).unwrap());
    assert_eq!(
        store.get(entry).unwrap().unwrap().expose(),
        "sk-live-ABCDEF123456"
    );
    // Replacing works.
    store.set(entry, &ApiKey::new("sk-live-XYZ")).unwrap();
    assert_eq!(store.get(entry).unwrap().unwrap().expose(), "sk-live-XYZ");

    // It really is in the Secret Service (not an in-memory mock): secret-tool sees it.
    if let Ok(o) = Command::new("secret-tool")
        .args(["search", "--all", "service", "phoneagent"])
        .output()
    {
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            all.contains("test.openai"),
            "secret-tool did not list the entry: {all}"
        );
    }

    // A profile naming the entry gets the key; the resolution's Debug never shows it.
    let json = r#"{
      "profiles": {
        "cloud": {"base_url": "https://api.example.com/v1", "model": "gpt-x", "keyring_entry": "test.openai"},
        "cloud2": {"base_url": "https://api.example.com/v1", "model": "gpt-y", "keyring_entry": "test.missing"},
        "local": {"base_url": "http://127.0.0.1:8000/v1", "model": "autoglm"}
      },
      "roles": {"actor": {"model": "cloud"}, "verifier": {"model": "cloud2"}}
    }"#;
    let cfg = ModelsConfig::from_json(json, std::path::Path::new("models.json")).unwrap();
    let actor = cfg.resolve(Role::Actor, &store).unwrap();
    let m = actor.model().unwrap();
    assert_eq!(m.api_key.as_ref().unwrap().expose(), "sk-live-XYZ");
    assert_eq!(m.key_source, "keyring entry \"test.openai\"");
    assert!(!format!("{actor:?}").contains("sk-live"));
    let client = m.client().unwrap();
    assert!(!format!("{client:?}").contains("sk-live"));

    // The verifier's entry holds no key: one hop to the actor, with the reason audited.
    match cfg.resolve(Role::Verifier, &store).unwrap() {
        RoleResolution::Resolved(v) => {
            let fb = v.fallback.clone().unwrap();
            assert_eq!(fb.to_role, Role::Actor);
            assert!(
                fb.reason.contains(
                    "names keyring entry \"test.missing\", but the OS keyring holds no key"
                ),
                "{}",
                fb.reason
            );
        }
        other => panic!("{other:?}"),
    }
    // Bound directly, the missing key is a model_config error that says what to do.
    let mut c2 = cfg.clone();
    c2.set_role(Role::Actor, "cloud2");
    let err = c2.resolve(Role::Actor, &store).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ModelConfig);
    assert!(
        err.to_string()
            .contains("store the API key under service \"phoneagent\""),
        "{err}"
    );

    assert!(store.delete(entry).unwrap());
    assert!(!store.delete(entry).unwrap());
    assert!(store.get(entry).unwrap().is_none());
    // Invalid names are refused before touching the keyring.
    assert!(store.get("bad name").is_err());
}
