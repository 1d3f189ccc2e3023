//! Lexicons: the words and shapes the gate looks for, as data files a user can read and extend
//! (SPEC S3).
//!
//! A lexicon file is TOML with a list of `[[entry]]` tables:
//!
//! ```toml
//! [[entry]]
//! id = "commit.zh.confirm_pay"     # unique; a user file entry with the same id replaces it
//! category = "commit_phrase"       # which rule uses it (see `Category`)
//! kind = "payment"                 # the irreversible effect (commit_phrase, irreversible_object)
//! lang = "zh"                      # documentation only: zh, en or any
//! pattern = "确认(支付|付款)"       # a regular expression (Rust `regex` syntax), case-insensitive
//! examples = ["确认支付", "点击确认付款"]   # each must match, checked when the lexicon loads
//! counter_examples = ["支付方式"]           # each must NOT match, checked when it loads
//! ```
//!
//! Optional keys: `case_sensitive = true`; `typed_only = true` (credential words that count in
//! typed text but not in tap targets); `note = "…"`. When a pattern has a capture group named
//! `m`, only that group is the evidence (so a pattern can look at a neighbouring character, e.g.
//! `(?:^|[^0-9])(?<m>1[3-9][0-9]{9})(?:[^0-9]|$)`, without reporting it). Text is normalized before
//! matching (NFKC, invisible characters removed, confusables folded, Traditional → Simplified,
//! spaces inside words removed; see `docs/safety.md` § Normalization), examples too. Prefer `[0-9]` to `\d`: the Unicode `\d` class makes patterns slow to compile.
//!
//! The built-in lexicons live in `crates/phoneagent-safety/lexicons/*.toml` and are embedded in
//! the binary; [`Lexicon::extend`] merges a user file over them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::normalize::normalize;

/// Which rule of SPEC S3 a lexicon entry feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Shapes of credentials in typed text: phone numbers, e-mail, order/card numbers, keys,
    /// a bare one-time code. Typed text → hard (`credential_text`).
    CredentialShape,
    /// Credential/OTP words (密码/验证码/登录/账户, password/OTP/login/account…). Typed text →
    /// hard (`credential_text`); tap/long-press target → hard (`credential_target`) unless the
    /// entry is `typed_only`.
    CredentialWord,
    /// Payment/bank-like app names for `launch_app` → soft (`payment_app_launch`).
    PaymentApp,
    /// A complete commit by itself ("确认支付", "Place order", "Send", "Install", "Allow") → hard
    /// (`commit_irreversible`). Needs `kind`.
    CommitPhrase,
    /// A commit verb ("确认", "提交", "Confirm", "Submit"); next to an irreversible object it
    /// makes a commit → hard; alone it is a policy word → soft.
    CommitVerb,
    /// An irreversible object ("支付", "订单", "删除", "payment", "order") → soft when bare,
    /// hard next to a commit verb. Needs `kind`. Also names the forbidden effect of a negated
    /// task boundary (SPEC S4).
    IrreversibleObject,
    /// Other policy words (余额, 银行卡, log out…) → soft (`policy_word`).
    PolicyWord,
    /// Benign look-alikes ("Send feedback", "不允许", "已发送"): their spans are blanked before
    /// the word rules run. Never applied to credential shapes.
    Benign,
    /// Negation cues of task boundaries ("不要", "别", "don't", "without") (SPEC S4).
    Negation,
    /// Negation cues that follow the effect they forbid ("sending is forbidden", "付款这一步不要
    /// 做", "Place order is off-limits") (SPEC S4).
    NegationAfter,
    /// Words that end the scope of a negation cue ("but", "then", "然后", "而是"): "don't just
    /// look but buy it" forbids nothing (SPEC S4).
    ScopeBreak,
    /// Effect verbs as a task states them ("买", "发给", "reply", "top up"), with a `kind`: the
    /// task authorizes that kind (SPEC S12) unless negated (SPEC S4). Read in tasks only.
    TaskEffect,
    /// A bare affirmative control label ("确定", "OK", "Yes", "继续", "允许"): in a dialog it
    /// takes its meaning from the dialog's title and body (SPEC S10).
    Affirmative,
    /// A dismissive control label ("取消", "Cancel", "Not now"): the dialog's text says nothing
    /// about what the tap does (SPEC S10).
    Dismiss,
    /// "This cannot be undone" markers ("无法撤销", "cannot be undone", "permanently"): the
    /// affirmative button of a dialog that says so is hard (SPEC S10).
    Irreversibility,
    /// Screen-level context that makes an effect plausible, with a `kind`: a compose screen
    /// (收件人, Subject) → send, a checkout (实付, Order total) → payment, a danger zone → delete
    /// (SPEC S10, S11). Never raises a tier by itself.
    ScreenContext,
    /// The shape of a commitment: a money amount or a commit-like verb ("¥25/月", "$9.99",
    /// "确认", "Submit"). A target with that shape whose object the lexicons do not know is at
    /// least `reviewer` tier (`commitment_shape`, SPEC S3).
    CommitShape,
}

impl Category {
    /// True for the categories whose entries need a `kind`: commit phrases, irreversible
    /// objects, task effects and screen context.
    pub fn needs_kind(self) -> bool {
        matches!(
            self,
            Self::CommitPhrase | Self::IrreversibleObject | Self::TaskEffect | Self::ScreenContext
        )
    }

    /// The snake_case name used in lexicon files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CredentialShape => "credential_shape",
            Self::CredentialWord => "credential_word",
            Self::PaymentApp => "payment_app",
            Self::CommitPhrase => "commit_phrase",
            Self::CommitVerb => "commit_verb",
            Self::IrreversibleObject => "irreversible_object",
            Self::PolicyWord => "policy_word",
            Self::Benign => "benign",
            Self::Negation => "negation",
            Self::NegationAfter => "negation_after",
            Self::ScopeBreak => "scope_break",
            Self::TaskEffect => "task_effect",
            Self::Affirmative => "affirmative",
            Self::Dismiss => "dismiss",
            Self::Irreversibility => "irreversibility",
            Self::ScreenContext => "screen_context",
            Self::CommitShape => "commit_shape",
        }
    }
}

pub use crate::effect::EffectKind;

/// One lexicon entry as written in a file (see the module docs for the format).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntrySpec {
    /// Unique id, e.g. `zh.confirm_pay`. A later file's entry with the same id replaces it.
    pub id: String,
    /// Which rule uses the entry.
    pub category: Category,
    /// The irreversible effect (required for `commit_phrase` and `irreversible_object`).
    #[serde(default)]
    pub kind: Option<EffectKind>,
    /// Language, for readers: `zh`, `en` or `any`.
    #[serde(default)]
    pub lang: Option<String>,
    /// Regular expression (Rust `regex` syntax), case-insensitive unless `case_sensitive`.
    pub pattern: String,
    /// Match case-sensitively.
    #[serde(default)]
    pub case_sensitive: bool,
    /// For `credential_word`: counts in typed text only, not in tap targets.
    #[serde(default)]
    pub typed_only: bool,
    /// Phrases the pattern must match (at least one), checked at load.
    #[serde(default)]
    pub examples: Vec<String>,
    /// Phrases the pattern must not match, checked at load.
    #[serde(default)]
    pub counter_examples: Vec<String>,
    /// Free-text note for readers.
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    entry: Vec<EntrySpec>,
}

/// A compiled entry.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) spec: EntrySpec,
    pub(crate) origin: String,
    regex: Regex,
    /// Index of the capture group named `m`, when present.
    group: Option<usize>,
}

/// One match of an entry in a (normalized) text: byte offsets of the evidence span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hit {
    pub(crate) entry: usize,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

#[derive(Debug, Clone)]
struct CategoryIndex {
    set: RegexSet,
    members: Vec<usize>,
}

/// A set of compiled, validated lexicon entries, indexed by category.
#[derive(Debug, Clone)]
pub struct Lexicon {
    entries: Vec<Entry>,
    index: HashMap<Category, CategoryIndex>,
}

/// The built-in lexicon files, embedded at compile time: (file name, TOML text).
pub const BUILTIN_FILES: &[(&str, &str)] = &[
    (
        "credential.toml",
        include_str!("../lexicons/credential.toml"),
    ),
    ("commit.toml", include_str!("../lexicons/commit.toml")),
    ("objects.toml", include_str!("../lexicons/objects.toml")),
    ("apps.toml", include_str!("../lexicons/apps.toml")),
    ("policy.toml", include_str!("../lexicons/policy.toml")),
    ("benign.toml", include_str!("../lexicons/benign.toml")),
    ("negation.toml", include_str!("../lexicons/negation.toml")),
    ("task.toml", include_str!("../lexicons/task.toml")),
    ("screen.toml", include_str!("../lexicons/screen.toml")),
];

fn wrap(spec: &EntrySpec) -> String {
    if spec.case_sensitive {
        format!("(?:{})", spec.pattern)
    } else {
        format!("(?i:{})", spec.pattern)
    }
}

fn compile(spec: EntrySpec, origin: &str) -> Result<Entry> {
    let entry_err = |problem: String| Error::LexiconEntry {
        origin: origin.to_string(),
        id: spec.id.clone(),
        problem,
    };
    if spec.id.trim().is_empty() {
        return Err(entry_err(
            "the id is empty; give every entry a unique id".into(),
        ));
    }
    let needs_kind = spec.category.needs_kind();
    match (needs_kind, spec.kind) {
        (true, None) => {
            return Err(entry_err(format!(
                "category {} needs a `kind` ({})",
                spec.category.as_str(),
                EffectKind::ALL.map(EffectKind::as_str).join(", ")
            )));
        }
        (false, Some(_)) => {
            return Err(entry_err(format!(
                "`kind` is only used by commit_phrase, irreversible_object, task_effect and screen_context entries; remove it from this {} entry",
                spec.category.as_str()
            )));
        }
        _ => {}
    }
    if spec.typed_only && spec.category != Category::CredentialWord {
        return Err(entry_err(
            "`typed_only` is only used by credential_word entries; remove it".into(),
        ));
    }
    if spec.examples.is_empty() {
        return Err(entry_err(
            "no examples: every entry needs at least one example phrase its pattern matches".into(),
        ));
    }
    let regex = RegexBuilder::new(&wrap(&spec))
        .build()
        .map_err(|e| Error::LexiconPattern {
            origin: origin.to_string(),
            id: spec.id.clone(),
            pattern: spec.pattern.clone(),
            message: e.to_string(),
        })?;
    if regex.is_match("") {
        return Err(entry_err(format!(
            "pattern {:?} matches the empty text, so it would match everything; make it require at least one character",
            spec.pattern
        )));
    }
    let group = regex.capture_names().position(|n| n == Some("m"));
    let example_err = |problem: String| Error::LexiconExample {
        origin: origin.to_string(),
        id: spec.id.clone(),
        problem,
    };
    for ex in &spec.examples {
        if !regex.is_match(&normalize(ex)) {
            return Err(example_err(format!(
                "example {ex:?} does not match pattern {:?}",
                spec.pattern
            )));
        }
    }
    for ex in &spec.counter_examples {
        if regex.is_match(&normalize(ex)) {
            return Err(example_err(format!(
                "counter-example {ex:?} matches pattern {:?}, but must not",
                spec.pattern
            )));
        }
    }
    Ok(Entry {
        spec,
        origin: origin.to_string(),
        regex,
        group,
    })
}

impl Lexicon {
    /// The built-in lexicons (`lexicons/*.toml`, embedded). Fails only if a built-in file is
    /// broken, which the crate's tests rule out.
    pub fn builtin() -> Result<Self> {
        let mut lex = Self::empty();
        for (name, src) in BUILTIN_FILES {
            let origin = format!("builtin:{name}");
            let file = Self::from_toml(src, &origin)?;
            // Built-in files must not override each other: only a user's file may.
            if let Some(e) = file
                .entries
                .iter()
                .find(|e| lex.origin(&e.spec.id).is_some())
            {
                return Err(Error::LexiconEntry {
                    origin,
                    id: e.spec.id.clone(),
                    problem: format!(
                        "id already defined in {}; built-in ids must be unique across files",
                        lex.origin(&e.spec.id).unwrap_or_default()
                    ),
                });
            }
            lex.extend(file);
        }
        Ok(lex)
    }

    /// A lexicon with no entries.
    pub fn empty() -> Self {
        Self {
            entries: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// Parse and validate one lexicon file's text. `origin` names it in errors.
    ///
    /// # Errors
    /// [`Error::LexiconSyntax`] for bad TOML or unknown keys/categories,
    /// [`Error::LexiconPattern`] for a bad regex, [`Error::LexiconExample`] when an example does
    /// not match (or a counter-example matches), [`Error::LexiconEntry`] for a missing/extra
    /// `kind`, no examples, an empty-matching pattern or a duplicate id.
    pub fn from_toml(src: &str, origin: &str) -> Result<Self> {
        let file: FileSpec = toml::from_str(src).map_err(|e| Error::LexiconSyntax {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        let mut seen = HashSet::new();
        let mut entries = Vec::with_capacity(file.entry.len());
        for spec in file.entry {
            if !seen.insert(spec.id.clone()) {
                return Err(Error::LexiconEntry {
                    origin: origin.to_string(),
                    id: spec.id,
                    problem: "duplicate id in this file; ids must be unique".into(),
                });
            }
            entries.push(compile(spec, origin)?);
        }
        let mut lex = Self {
            entries,
            index: HashMap::new(),
        };
        lex.reindex();
        Ok(lex)
    }

    /// Read, parse and validate a user's lexicon file.
    ///
    /// # Errors
    /// [`Error::LexiconRead`] when the file cannot be read, else as [`Lexicon::from_toml`].
    pub fn load_file(path: &Path) -> Result<Self> {
        let src = std::fs::read_to_string(path).map_err(|source| Error::LexiconRead {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_toml(&src, &path.display().to_string())
    }

    /// Merge `other` over `self`: an entry with an id already present replaces it in place, new
    /// ids are appended.
    pub fn extend(&mut self, other: Lexicon) {
        let mut pos: BTreeMap<String, usize> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.spec.id.clone(), i))
            .collect();
        for e in other.entries {
            match pos.get(&e.spec.id) {
                Some(&i) => self.entries[i] = e,
                None => {
                    pos.insert(e.spec.id.clone(), self.entries.len());
                    self.entries.push(e);
                }
            }
        }
        self.reindex();
    }

    fn reindex(&mut self) {
        let mut by_cat: BTreeMap<Category, Vec<usize>> = BTreeMap::new();
        for (i, e) in self.entries.iter().enumerate() {
            by_cat.entry(e.spec.category).or_default().push(i);
        }
        self.index.clear();
        for (cat, members) in by_cat {
            let patterns: Vec<String> = members
                .iter()
                .map(|&i| wrap(&self.entries[i].spec))
                .collect();
            // Every pattern compiled on its own already; a set of them compiles too unless it
            // exceeds the size limit, in which case the slow path (no prefilter) is used.
            let set = RegexSetBuilder::new(&patterns)
                .size_limit(64 << 20)
                .build()
                .unwrap_or_else(|_| RegexSet::empty());
            self.index.insert(cat, CategoryIndex { set, members });
        }
    }

    /// The entries' specs, in load order.
    pub fn entries(&self) -> impl Iterator<Item = &EntrySpec> {
        self.entries.iter().map(|e| &e.spec)
    }

    /// The file (or `builtin:<name>`) the entry with this id came from.
    pub fn origin(&self, id: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|e| e.spec.id == id)
            .map(|e| e.origin.as_str())
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn entry(&self, i: usize) -> &Entry {
        &self.entries[i]
    }

    /// All matches of `category` entries in `text` (already normalized), in entry order.
    pub(crate) fn hits(&self, category: Category, text: &str) -> Vec<Hit> {
        let mut out = Vec::new();
        if text.is_empty() {
            return out;
        }
        let Some(idx) = self.index.get(&category) else {
            return out;
        };
        let candidates: Vec<usize> = if idx.set.len() == idx.members.len() {
            idx.set
                .matches(text)
                .iter()
                .map(|k| idx.members[k])
                .collect()
        } else {
            idx.members.clone()
        };
        for i in candidates {
            let e = &self.entries[i];
            match e.group {
                None => {
                    for m in e.regex.find_iter(text) {
                        if m.start() < m.end() {
                            out.push(Hit {
                                entry: i,
                                start: m.start(),
                                end: m.end(),
                            });
                        }
                    }
                }
                Some(g) => {
                    for caps in e.regex.captures_iter(text) {
                        if let Some(m) = caps.get(g).filter(|m| m.start() < m.end()) {
                            out.push(Hit {
                                entry: i,
                                start: m.start(),
                                end: m.end(),
                            });
                        }
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_loads_and_every_category_is_present() {
        let lex = Lexicon::builtin().unwrap();
        for cat in [
            Category::CredentialShape,
            Category::CredentialWord,
            Category::PaymentApp,
            Category::CommitPhrase,
            Category::CommitVerb,
            Category::IrreversibleObject,
            Category::PolicyWord,
            Category::Benign,
            Category::Negation,
            Category::NegationAfter,
            Category::ScopeBreak,
            Category::TaskEffect,
            Category::Affirmative,
            Category::Dismiss,
            Category::Irreversibility,
            Category::ScreenContext,
            Category::CommitShape,
        ] {
            assert!(
                lex.entries().any(|e| e.category == cat),
                "no built-in entry of category {}",
                cat.as_str()
            );
        }
        // The prefilter set compiled for every category.
        for idx in lex.index.values() {
            assert_eq!(idx.set.len(), idx.members.len());
        }
    }

    #[test]
    fn example_that_does_not_match_fails_to_load_naming_entry_and_example() {
        let src = r#"
[[entry]]
id = "my.pay"
category = "commit_phrase"
kind = "payment"
pattern = "立即支付"
examples = ["马上付款"]
"#;
        let err = Lexicon::from_toml(src, "user.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("user.toml"), "{err}");
        assert!(err.contains("my.pay"), "{err}");
        assert!(err.contains("马上付款"), "{err}");
        assert!(err.contains("does not match"), "{err}");
    }

    #[test]
    fn counter_example_that_matches_fails_to_load() {
        let src = r#"
[[entry]]
id = "my.obj"
category = "irreversible_object"
kind = "payment"
pattern = "支付"
examples = ["确认支付"]
counter_examples = ["支付方式"]
"#;
        let err = Lexicon::from_toml(src, "user.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("counter-example \"支付方式\""), "{err}");
    }

    #[test]
    fn structural_errors_are_named() {
        let no_kind = "[[entry]]\nid='a'\ncategory='commit_phrase'\npattern='x'\nexamples=['x']\n";
        let e = Lexicon::from_toml(no_kind, "f").unwrap_err().to_string();
        assert!(e.contains("needs a `kind`"), "{e}");

        let no_examples = "[[entry]]\nid='a'\ncategory='policy_word'\npattern='x'\n";
        let e = Lexicon::from_toml(no_examples, "f")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no examples"), "{e}");

        let empty = "[[entry]]\nid='a'\ncategory='policy_word'\npattern='x*'\nexamples=['x']\n";
        let e = Lexicon::from_toml(empty, "f").unwrap_err().to_string();
        assert!(e.contains("matches the empty text"), "{e}");

        let bad_re = "[[entry]]\nid='a'\ncategory='policy_word'\npattern='(x'\nexamples=['x']\n";
        let e = Lexicon::from_toml(bad_re, "f").unwrap_err().to_string();
        assert!(e.contains("not a valid regular expression"), "{e}");

        let dup = "[[entry]]\nid='a'\ncategory='policy_word'\npattern='x'\nexamples=['x']\n\
                   [[entry]]\nid='a'\ncategory='policy_word'\npattern='y'\nexamples=['y']\n";
        let e = Lexicon::from_toml(dup, "f").unwrap_err().to_string();
        assert!(e.contains("duplicate id"), "{e}");

        let unknown = "[[entry]]\nid='a'\ncategory='nonsense'\npattern='x'\nexamples=['x']\n";
        let e = Lexicon::from_toml(unknown, "f").unwrap_err().to_string();
        assert!(e.contains("not a valid lexicon file"), "{e}");

        let typo = "[[entry]]\nid='a'\ncategory='policy_word'\npatern='x'\nexamples=['x']\n";
        let e = Lexicon::from_toml(typo, "f").unwrap_err().to_string();
        assert!(e.contains("patern"), "{e}");
    }

    #[test]
    fn extend_replaces_by_id_and_appends_new_ids() {
        let mut base = Lexicon::from_toml(
            "[[entry]]\nid='a'\ncategory='policy_word'\npattern='apple'\nexamples=['apple']\n",
            "base",
        )
        .unwrap();
        let user = Lexicon::from_toml(
            "[[entry]]\nid='a'\ncategory='policy_word'\npattern='pear'\nexamples=['pear']\n\
             [[entry]]\nid='b'\ncategory='policy_word'\npattern='plum'\nexamples=['plum']\n",
            "user",
        )
        .unwrap();
        base.extend(user);
        assert_eq!(base.len(), 2);
        assert!(base.hits(Category::PolicyWord, "apple").is_empty());
        assert_eq!(base.hits(Category::PolicyWord, "pear plum").len(), 2);
        assert_eq!(base.entry(0).origin, "user");
    }

    #[test]
    fn named_group_m_is_the_evidence() {
        let lex = Lexicon::from_toml(
            "[[entry]]\nid='p'\ncategory='credential_shape'\npattern='(?:^|[^0-9])(?<m>1[3-9][0-9]{9})(?:[^0-9]|$)'\nexamples=['电话13800138000']\ncounter_examples=['213800138000']\n",
            "t",
        )
        .unwrap();
        let text = "电话13800138000。";
        let hits = lex.hits(Category::CredentialShape, text);
        assert_eq!(hits.len(), 1);
        assert_eq!(&text[hits[0].start..hits[0].end], "13800138000");
    }
}
