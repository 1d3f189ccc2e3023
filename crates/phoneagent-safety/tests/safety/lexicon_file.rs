//! A user's lexicon file extends and overrides the built-in lexicons (SPEC S3).

use std::io::Write;

use phoneagent_safety::{Gate, GateInput, RiskTier, Tool};

#[test]
fn user_file_adds_entries_and_overrides_by_id() {
    let dir = std::env::temp_dir().join(format!("pa-safety-lex-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mine.toml");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(
        r#"
[[entry]]
id = "user.tip"
category = "commit_phrase"
kind = "payment"
lang = "zh"
pattern = '打赏'
examples = ["打赏作者"]

[[entry]]
id = "commit.en.install"
category = "commit_phrase"
kind = "install"
lang = "en"
pattern = '(?-u:\b)install now(?-u:\b)'
examples = ["Install now"]
"#
        .as_bytes(),
    )
    .unwrap();
    drop(f);
    let gate = Gate::with_user_lexicon(&path).unwrap();
    let tip = gate.classify(&GateInput::new(Tool::Tap).target("打赏作者"));
    assert_eq!(tip.tier, RiskTier::Hard);
    assert_eq!(tip.reasons[0].entry.as_deref(), Some("user.tip"));
    assert_eq!(
        gate.lexicon().origin("user.tip"),
        Some(path.display().to_string().as_str())
    );
    // The built-in en.install was replaced: a bare "Install" is now only the soft object.
    let bare = gate.classify(&GateInput::new(Tool::Tap).target("Install"));
    assert_eq!(bare.tier, RiskTier::Soft);
    let now = gate.classify(&GateInput::new(Tool::Tap).target("Install now"));
    assert_eq!(now.tier, RiskTier::Hard);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn broken_user_file_fails_with_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("pa-safety-lex-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(
        &path,
        "[[entry]]\nid = 'user.x'\ncategory = 'policy_word'\npattern = '余额宝'\nexamples = ['余额']\n",
    )
    .unwrap();
    let err = Gate::with_user_lexicon(&path).unwrap_err().to_string();
    assert!(
        err.contains("bad.toml") && err.contains("user.x") && err.contains("余额"),
        "{err}"
    );
    let missing = Gate::with_user_lexicon(&dir.join("nope.toml"))
        .unwrap_err()
        .to_string();
    assert!(missing.contains("cannot read lexicon file"), "{missing}");
    std::fs::remove_dir_all(&dir).ok();
}
