//! The reader on the virtual phone's real frames (SPEC S10, S11, P6): the shop's 提交订单 /
//! 确认支付, settings' 删除账号 → 确认删除 dialog, mail compose's 发送, the login password field;
//! and on real-app-like renders (white on red, dark mode, Traditional Chinese, a bare "Yes").
//!
//! Needs Tesseract with chi_sim, chi_tra and eng (scripts/install-deps.sh): without it these
//! tests FAIL with the fix, they never skip.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::OnceLock;

use phoneagent_vision::{ReadPurpose, ReaderConfig, ScreenReader};
use support::{Phone, squash};

fn reader() -> &'static ScreenReader {
    static R: OnceLock<ScreenReader> = OnceLock::new();
    R.get_or_init(|| {
        ScreenReader::new(ReaderConfig::default()).unwrap_or_else(|e| {
            panic!("the OCR engine is required for these tests (CI installs it): {e}")
        })
    })
}

/// `got` contains one of the `|`-separated alternatives of `want` (whitespace ignored).
fn has(got: &Option<String>, want: &str) -> bool {
    got.as_deref()
        .is_some_and(|g| want.split('|').any(|w| squash(g).contains(&squash(w))))
}

#[tokio::test]
async fn checkout_submit_order_is_read_with_its_bottom_bar() {
    let phone = Phone::start().await.unwrap();
    let f = phone.frame_after("checkout", &[]).await.unwrap();
    let r = reader().read(&f.image, f.center("checkout.submit"), ReadPurpose::Tap);
    assert!(has(&r.target_text, "提交订单"), "{r:#?}");
    assert!(r.target_style.filled, "orange filled button: {r:#?}");
    let b = f.element("checkout.submit").bounds;
    let tb = r.target_bounds.expect("bounds");
    assert!(
        tb.left.abs_diff(b[0] as u32) <= 8 && tb.right.abs_diff(b[2] as u32) <= 8,
        "{tb:?} vs {b:?}"
    );
    assert!(
        r.button_row.iter().any(|s| squash(s).contains("实付款")),
        "{r:#?}"
    );
    assert!(has(&r.page_title, "确认订单"), "{r:#?}");
    assert!(r.dialog.is_none(), "{r:#?}");
    assert!(r.engine.starts_with("tesseract 5"), "{}", r.engine);
}

#[tokio::test]
async fn confirm_pay_is_read_inside_the_payment_sheet() {
    let phone = Phone::start().await.unwrap();
    let f = phone.frame_after("payment", &[]).await.unwrap();
    let r = reader().read(&f.image, f.center("pay.confirm"), ReadPurpose::Tap);
    assert!(has(&r.target_text, "确认支付"), "{r:#?}");
    let d = r
        .dialog
        .as_ref()
        .expect("the sheet over the dimmed checkout is a dialog");
    assert!(has(&d.title, "确认付款"), "{d:#?}");
    assert!(d.target_is_primary, "{d:#?}");
}

#[tokio::test]
async fn delete_account_then_the_confirm_dialog() {
    let phone = Phone::start().await.unwrap();
    let f = phone.frame_after("settings", &[]).await.unwrap();
    let r = reader().read(
        &f.image,
        f.center("settings.delete_account"),
        ReadPurpose::Tap,
    );
    assert!(has(&r.target_text, "删除账号"), "{r:#?}");
    assert!(r.target_style.destructive, "red label: {r:#?}");
    assert!(r.dialog.is_none());

    let f = phone
        .frame_after("settings", &["settings.delete_account"])
        .await
        .unwrap();
    let r = reader().read(&f.image, f.center("delete.confirm"), ReadPurpose::Tap);
    assert!(has(&r.target_text, "确认删除"), "{r:#?}");
    assert!(
        r.target_style.destructive && r.target_style.filled,
        "{r:#?}"
    );
    let d = r.dialog.as_ref().expect("dialog");
    assert!(has(&d.title, "删除账号"), "{d:#?}");
    assert!(has(&d.body, "无法恢复"), "{d:#?}");
    let buttons: Vec<String> = d.buttons.iter().map(|b| squash(b)).collect();
    assert_eq!(
        buttons,
        vec!["取消".to_owned(), "确认删除".to_owned()],
        "{d:#?}"
    );
    assert!(d.target_is_primary, "{d:#?}");
    // The cancel button is not the primary one.
    let r = reader().read(&f.image, f.center("delete.cancel"), ReadPurpose::Tap);
    assert!(has(&r.target_text, "取消"), "{r:#?}");
    assert!(!r.dialog.expect("dialog").target_is_primary);
}

#[tokio::test]
async fn compose_send_and_its_page_title() {
    let phone = Phone::start().await.unwrap();
    let f = phone.frame_after("mail_compose", &[]).await.unwrap();
    let r = reader().read(&f.image, f.center("compose.send"), ReadPurpose::Tap);
    assert!(has(&r.target_text, "发送"), "{r:#?}");
    assert!(!r.target_unreadable);
}

#[tokio::test]
async fn the_password_field_is_labelled_for_type_text() {
    let phone = Phone::start().await.unwrap();
    let f = phone
        .frame_after("login", &["login.password"])
        .await
        .unwrap();
    let r = reader().read(&f.image, f.center("login.password"), ReadPurpose::Type);
    assert!(has(&r.field_label, "密码"), "{r:#?}");
    // The username field says 用户名, not 密码.
    let r = reader().read(&f.image, f.center("login.username"), ReadPurpose::Type);
    assert!(has(&r.field_label, "用户名"), "{r:#?}");
    // The mail subject field's label sits left of it.
    let f = phone.frame_after("mail_compose", &[]).await.unwrap();
    let r = reader().read(&f.image, f.center("mail.subject"), ReadPurpose::Type);
    assert!(has(&r.field_label, "主题"), "{r:#?}");
}

#[test]
fn real_app_like_renders() {
    let mut failures = Vec::new();
    for c in support::synth::cases() {
        let r = reader().read(&c.image, c.point, ReadPurpose::Tap);
        let ok = if c.expect.is_empty() {
            r.target_unreadable && r.target_text.is_none()
        } else {
            has(&r.target_text, &c.expect)
        };
        if !ok {
            failures.push(format!(
                "{}: want {:?}, got {:?} (unreadable {})",
                c.name, c.expect, r.target_text, r.target_unreadable
            ));
        }
        if c.name.ends_with("en_dialog_bare_yes") {
            let d = r.dialog.as_ref().expect("the Yes sits in a dialog");
            assert!(has(&d.title, "Cancel your order"), "{d:#?}");
            assert!(has(&d.body, "cannot be undone"), "{d:#?}");
            assert!(d.target_is_primary, "{d:#?}");
        }
        if c.name.ends_with("zh_dark_dialog_ok_red") {
            let d = r.dialog.as_ref().expect("dark dialog");
            assert!(has(&d.title, "清空回收站"), "{d:#?}");
            assert!(r.target_style.destructive, "{r:#?}");
        }
        if c.name.ends_with("icon_send_unreadable") {
            assert!(has(&r.page_title, "写邮件"), "{r:#?}");
        }
    }
    // The bench prints each miss; here: at most one of the renders may be misread, and never
    // one the gate depends on most (the pay / delete / order buttons, the bare Yes, the icon).
    assert!(failures.len() <= 1, "{failures:#?}");
    for must in [
        "zh_hant_confirm_pay",
        "en_dialog_bare_yes",
        "zh_dark_dialog_ok_red",
        "icon_send",
        "zh_delete_white_on_red",
        "en_place_order",
        "zh_buy_now",
    ] {
        assert!(!failures.iter().any(|f| f.contains(must)), "{failures:#?}");
    }
}

/// Issue #14: the Traditional Chinese engine is loaded only when a Chinese line is unsure. The
/// virtual phone's purchase (product → checkout → payment sheet) never needs it, and a reader
/// that did not load it still reads the real-app-like Traditional render.
#[tokio::test]
async fn the_fallback_engine_loads_only_when_a_chinese_line_needs_it() {
    let reader = ScreenReader::new(ReaderConfig::default()).unwrap();
    let phone = Phone::start().await.unwrap();
    for (screen, element, want) in [
        ("checkout", "checkout.submit", "提交订单"),
        ("payment", "pay.confirm", "确认支付"),
    ] {
        let f = phone.frame_after(screen, &[]).await.unwrap();
        let r = reader.read(&f.image, f.center(element), ReadPurpose::Tap);
        assert!(has(&r.target_text, want), "{r:#?}");
    }
    assert!(
        !reader.fallback_loaded(),
        "the purchase screens loaded the Traditional Chinese engine"
    );
    let hant = support::synth::cases()
        .into_iter()
        .find(|c| c.name.contains("zh_hant_confirm_pay"))
        .expect("the Traditional render");
    let r = reader.read(&hant.image, hant.point, ReadPurpose::Tap);
    assert!(has(&r.target_text, &hant.expect), "{r:#?}");
}

/// A touch anywhere on a high-stakes button's touch area — its corners and the middles of its
/// edges, not only its centre — reads the button's label as the target or as an element next to
/// the point (SPEC S10; attacker pass: a tap at the top edge of the compose screen's Send read as
/// the status bar). Every scenario of the virtual phone, every button whose label commits.
#[tokio::test]
async fn every_edge_of_a_committing_button_reads_its_label() {
    let commits = [
        "发送", "支付", "付款", "提交", "删除", "确认", "购买", "下单", "清空", "转账", "续费",
        "开通", "注销", "送出", "Send", "Pay", "Delete", "Place", "Buy", "Confirm",
    ];
    let phone = Phone::start().await.unwrap();
    let mut checked = 0;
    let mut misses = Vec::new();
    for s in phoneagent_sim::SCENARIOS {
        let f = phone.frame_after(s, &[]).await.unwrap();
        for e in &f.elements {
            if e.kind != "button" || !commits.iter().any(|c| e.label.contains(c)) {
                continue;
            }
            let [l, t, r, b] = e.bounds.map(|v| v.max(0) as u32);
            let (cx, cy) = ((l + r) / 2, (t + b) / 2);
            let inset = 4;
            let points = [
                (l + inset, t + inset),
                (r - inset, t + inset),
                (l + inset, b - inset),
                (r - inset, b - inset),
                (cx, t + inset),
                (cx, b - inset),
                (l + inset, cy),
                (r - inset, cy),
            ];
            // An icon-only button (its centre reads no text): an edge must at least say an
            // unreadable icon is there.
            let icon = reader()
                .read(&f.image, (cx, cy), ReadPurpose::Tap)
                .target_unreadable;
            // The commit words of the label: each must be read at every point.
            let words: Vec<String> = commits
                .iter()
                .filter(|c| e.label.contains(*c))
                .map(|c| squash(c))
                .collect();
            for p in points {
                let reading = reader().read(&f.image, p, ReadPurpose::Tap);
                checked += 1;
                let read: Vec<String> = reading
                    .target_text
                    .iter()
                    .chain(reading.nearby_texts.iter())
                    .map(|t| squash(t))
                    .collect();
                let seen = words
                    .iter()
                    .all(|w| read.iter().any(|t| t.contains(w.as_str())))
                    || (icon && (reading.target_unreadable || reading.nearby_unreadable));
                if !seen {
                    misses.push(format!(
                        "{s}/{} at {p:?}: target {:?}, nearby {:?}",
                        e.id, reading.target_text, reading.nearby_texts
                    ));
                }
            }
        }
    }
    assert!(checked >= 40, "only {checked} points checked");
    assert!(
        misses.is_empty(),
        "{} of {checked} points miss:\n{}",
        misses.len(),
        misses.join("\n")
    );
}

/// A tap in the empty middle of a filled text field reads that field and nothing it could
/// miss into: the compose screen with a recipient typed and the keyboard up once read the
/// subject field as "next to an unreadable icon" and held a harmless tap for approval
/// (regression of the near-miss reading, session 17).
#[tokio::test]
async fn a_tap_inside_a_field_is_no_near_miss() {
    let phone = Phone::start().await.unwrap();
    phone
        .frame_after("mail_compose", &["mail.to"])
        .await
        .unwrap();
    phone.shell("input text bob@example.com").await.unwrap();
    let f = phone.frame().unwrap();
    if let Ok(dir) = std::env::var("PHONEAGENT_DEBUG_PNG") {
        f.image.save(format!("{dir}/compose_typed.png")).unwrap();
    }
    for id in ["mail.subject", "mail.to", "mail.body"] {
        let r = reader().read(&f.image, f.center(id), ReadPurpose::Tap);
        assert!(!r.nearby_unreadable && !r.target_unreadable, "{id}: {r:#?}");
    }
}
