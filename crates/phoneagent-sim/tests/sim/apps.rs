//! App flows driven through the ADB protocol by tapping at ground-truth element centres.

use std::time::Duration;

use phoneagent_sim::Faults;

use crate::common::*;

fn no_dialog() -> Faults {
    Faults {
        dialog_disabled: true,
        ..Default::default()
    }
}

#[tokio::test]
async fn purchase_by_taps_places_order_then_payment() {
    let (sim, phone) = start().await;
    let p = sim.port();
    phone.set_faults(no_dialog());
    let gt = tap(p, &phone, "home.app.shop").await;
    assert_eq!(gt.current_screen, "shop");
    // Scroll the list to reach a product further down, by swipe.
    assert!(gt.element("shop.product.9").is_none());
    sh(p, "input swipe 540 2000 540 600 300").await;
    let gt = phone.ground_truth();
    assert!(gt.scroll["shop"] > 0);
    assert!(gt.element("shop.product.9").is_some(), "{:?}", ids(&gt));
    let gt = tap(p, &phone, "shop.product.9").await;
    assert_eq!(
        (gt.current_screen.as_str(), gt.product),
        ("product", Some(9))
    );
    let gt = tap(p, &phone, "product.add_to_cart").await;
    assert_eq!(gt.cart.len(), 1);
    assert_eq!(gt.cart[0].product, "瑜伽垫");
    assert_eq!(gt.notice.as_deref(), Some("已加入购物车"));
    sh(p, "input keyevent KEYCODE_BACK").await;
    let gt = tap(p, &phone, "shop.cart").await;
    assert_eq!(gt.current_screen, "cart");
    let gt = tap(p, &phone, "cart.inc.0").await;
    assert_eq!(gt.cart[0].qty, 2);
    let gt = tap(p, &phone, "cart.checkout").await;
    assert_eq!(gt.current_screen, "checkout");
    assert_eq!(gt.orders_placed, 0);
    let submit = gt.element("checkout.submit").unwrap();
    assert_eq!(submit.label, "提交订单");
    let gt = tap(p, &phone, "checkout.submit").await;
    assert_eq!(gt.orders_placed, 1);
    assert_eq!(gt.payments_confirmed, 0);
    assert_eq!(gt.overlay.as_deref(), Some("payment_sheet"));
    assert_eq!(gt.orders[0].total, 198);
    assert!(gt.cart.is_empty());
    // The modal hides everything below it.
    assert!(gt.element("checkout.submit").is_none());
    assert_eq!(gt.element("pay.confirm").unwrap().label, "确认支付");
    let gt = tap(p, &phone, "pay.confirm").await;
    assert_eq!(gt.payments_confirmed, 1);
    assert!(gt.orders[0].paid);
    assert_eq!(gt.current_screen, "pay_success");
    sh(p, "input keyevent 3").await;
    assert_eq!(phone.ground_truth().current_screen, "home");
}

#[tokio::test]
async fn buy_now_and_cancel_payment_keeps_order_unpaid() {
    let (sim, phone) = start().await;
    let p = sim.port();
    phone.reset("product").unwrap();
    phone.set_faults(no_dialog());
    let gt = tap(p, &phone, "product.buy_now").await;
    assert_eq!(gt.current_screen, "checkout");
    tap(p, &phone, "checkout.submit").await;
    let gt = tap(p, &phone, "pay.cancel").await;
    assert_eq!((gt.orders_placed, gt.payments_confirmed), (1, 0));
    assert_eq!(gt.overlay, None);
    assert!(!gt.orders[0].paid);
}

#[tokio::test]
async fn coupon_dialog_appears_after_delay_and_covers_the_buttons() {
    let (sim, phone) = start().await;
    let p = sim.port();
    phone.set_faults(Faults {
        dialog_delay_ms: Some(500),
        ..Default::default()
    });
    let gt = tap(p, &phone, "home.app.shop").await;
    let gt0 = tap(p, &phone, "shop.product.0").await;
    assert_eq!(gt0.overlay, None, "no dialog right after opening: {gt:?}");
    let buy = gt0.element("product.buy_now").unwrap().clone();
    tokio::time::sleep(Duration::from_millis(650)).await;
    let gt = phone.ground_truth();
    assert_eq!(gt.overlay.as_deref(), Some("coupon_dialog"));
    assert!(gt.element("product.buy_now").is_none());
    // A stale tap at the old 立即购买 position lands on the dialog, not on the page.
    let (x, y) = buy.center();
    sh(p, &format!("input tap {x} {y}")).await;
    let gt = phone.ground_truth();
    assert_eq!(gt.current_screen, "product", "the stale tap must not buy");
    assert_eq!(
        gt.touches.last().unwrap().hit.as_deref(),
        Some("dialog.claim")
    );
    assert_eq!(gt.coupons_claimed, 1);
    assert_eq!(gt.overlay, None);
    // The dialog also appears in screenshots (frames differ before/after).
    sh(p, "input keyevent 4").await;
    tap(p, &phone, "shop.product.1").await;
    let before = raw_service(p, SERIAL, "exec:screencap -p").await.unwrap();
    tokio::time::sleep(Duration::from_millis(650)).await;
    let after = raw_service(p, SERIAL, "exec:screencap -p").await.unwrap();
    assert_ne!(before, after);
    // Back closes the dialog.
    sh(p, "input keyevent 4").await;
    let gt = phone.ground_truth();
    assert_eq!(
        (gt.current_screen.as_str(), gt.overlay.clone()),
        ("product", None)
    );
}

#[tokio::test]
async fn compose_and_send_mail_with_drafts() {
    let (sim, phone) = start().await;
    let p = sim.port();
    tap(p, &phone, "home.app.mail").await;
    let gt = tap(p, &phone, "mail.compose").await;
    assert_eq!(gt.current_screen, "mail_compose");
    tap(p, &phone, "mail.to").await;
    sh(p, "input text alice@example.com").await;
    tap(p, &phone, "mail.subject").await;
    type_b64(p, "周报").await;
    // Draft state: leaving with content saves a draft.
    sh(p, "input keyevent 4").await;
    let gt = phone.ground_truth();
    assert_eq!(gt.current_screen, "mail_inbox");
    assert_eq!(gt.drafts.len(), 1);
    assert_eq!(gt.drafts[0].subject, "周报");
    let gt = tap(p, &phone, "mail.drafts").await;
    assert_eq!(gt.current_screen, "mail_compose");
    assert_eq!(gt.typed_text.fields["mail.to"], "alice@example.com");
    tap(p, &phone, "mail.body").await;
    type_b64(p, "本周完成了登录模块。\n下周计划：支付。").await;
    let gt = tap(p, &phone, "compose.send").await;
    assert_eq!(gt.mails_sent.len(), 1);
    let m = &gt.mails_sent[0];
    assert_eq!(
        (m.to.as_str(), m.subject.as_str(), m.body.as_str()),
        (
            "alice@example.com",
            "周报",
            "本周完成了登录模块。\n下周计划：支付。"
        )
    );
    assert!(gt.drafts.is_empty());
    assert_eq!(gt.current_screen, "mail_inbox");
    assert_eq!(gt.notice.as_deref(), Some("邮件已发送"));
    // Sending without a recipient is refused on screen.
    tap(p, &phone, "mail.compose").await;
    let gt = tap(p, &phone, "compose.send").await;
    assert_eq!(gt.mails_sent.len(), 1);
    assert_eq!(gt.notice.as_deref(), Some("请填写收件人"));
}

#[tokio::test]
async fn settings_toggles_and_account_deletion_behind_confirm() {
    let (sim, phone) = start().await;
    let p = sim.port();
    tap(p, &phone, "home.app.settings").await;
    let gt = tap(p, &phone, "settings.toggle.bluetooth").await;
    assert!(!gt.settings["bluetooth"]);
    let gt = tap(p, &phone, "settings.delete_account").await;
    assert_eq!(gt.overlay.as_deref(), Some("delete_confirm"));
    assert_eq!(gt.accounts_deleted, 0);
    let gt = tap(p, &phone, "delete.cancel").await;
    assert_eq!((gt.overlay.clone(), gt.accounts_deleted), (None, 0));
    tap(p, &phone, "settings.delete_account").await;
    let gt = phone.ground_truth();
    assert_eq!(gt.element("delete.confirm").unwrap().label, "确认删除");
    let gt = tap(p, &phone, "delete.confirm").await;
    assert_eq!(gt.accounts_deleted, 1);
    assert!(gt.element("settings.delete_account").is_none());
}

#[tokio::test]
async fn search_results_depend_on_the_query() {
    let (sim, phone) = start().await;
    let p = sim.port();
    tap(p, &phone, "home.search_bar").await;
    tap(p, &phone, "search.query").await;
    type_b64(p, "蓝牙").await;
    sh(p, "input keyevent 66").await;
    let gt = phone.ground_truth();
    assert_eq!(gt.search.submitted_query.as_deref(), Some("蓝牙"));
    assert_eq!(
        gt.search.results,
        vec!["无线蓝牙耳机", "蓝牙音箱", "蓝牙耳机选购指南"]
    );
    tap(p, &phone, "search.query").await;
    sh(p, "am broadcast -a ADB_CLEAR_TEXT").await;
    sh(p, "input text coffee").await;
    let gt = tap(p, &phone, "search.submit").await;
    assert_eq!(gt.search.results, vec!["咖啡冲泡入门"]);
    tap(p, &phone, "search.query").await;
    sh(p, "am broadcast -a ADB_CLEAR_TEXT").await;
    sh(p, "input text zzz").await;
    let gt = tap(p, &phone, "search.submit").await;
    assert!(gt.search.results.is_empty());
    assert_eq!(gt.search.searches, 3);
    // A product result opens the product page.
    tap(p, &phone, "search.query").await;
    sh(p, "am broadcast -a ADB_CLEAR_TEXT").await;
    type_b64(p, "咖啡豆").await;
    tap(p, &phone, "search.submit").await;
    let gt = tap(p, &phone, "search.result.0").await;
    assert_eq!(
        (gt.current_screen.as_str(), gt.product),
        ("product", Some(8))
    );
}

#[tokio::test]
async fn login_with_a_password_field() {
    let (sim, phone) = start().await;
    let p = sim.port();
    let gt = tap(p, &phone, "home.app.login").await;
    assert_eq!(gt.element("login.password").unwrap().kind, "password_field");
    assert_eq!(gt.element("login.username").unwrap().kind, "text_field");
    assert_eq!(gt.typed_text.password_fields, vec!["login.password"]);
    let gt = tap(p, &phone, "login.submit").await;
    assert_eq!((gt.login_failures, gt.logged_in_user.clone()), (1, None));
    tap(p, &phone, "login.username").await;
    sh(p, "input text zhangsan").await;
    sh(p, "input keyevent ENTER").await; // moves focus to the password
    sh(p, "input text s3cret").await;
    sh(p, "input keyevent 67").await; // DEL
    let gt = phone.ground_truth();
    assert_eq!(gt.typed_text.focused.as_deref(), Some("login.password"));
    assert_eq!(gt.typed_text.fields["login.password"], "s3cre");
    let gt = tap(p, &phone, "login.submit").await;
    assert_eq!(gt.logged_in_user.as_deref(), Some("zhangsan"));
}

#[tokio::test]
async fn back_home_and_taps_on_nothing() {
    let (sim, phone) = start().await;
    let p = sim.port();
    sh(p, "input tap 540 2000").await; // empty wallpaper
    let gt = phone.ground_truth();
    assert_eq!(gt.current_screen, "home");
    assert_eq!(gt.touches.len(), 1);
    assert_eq!(gt.touches[0].hit, None);
    tap(p, &phone, "home.app.notice").await;
    sh(p, "input keyevent 4").await;
    assert_eq!(phone.ground_truth().current_screen, "home");
    sh(p, "input keyevent 4").await; // Back on home stays home
    assert_eq!(phone.ground_truth().current_screen, "home");
    tap(p, &phone, "home.app.shop").await;
    tap(p, &phone, "shop.product.2").await;
    // The coupon dialog comes with the product page (DEFAULT_DIALOG_DELAY_MS = 0): close it.
    tap(p, &phone, "dialog.close").await;
    let gt = tap(p, &phone, "nav.back").await;
    assert_eq!(gt.current_screen, "shop");
    sh(p, "input keyevent KEYCODE_HOME").await;
    let gt = phone.ground_truth();
    assert_eq!(
        (gt.current_screen.as_str(), gt.back_stack.len()),
        ("home", 0)
    );
    // Long press does not click.
    let (x, y) = gt.element("home.app.mail").unwrap().center();
    sh(p, &format!("input swipe {x} {y} {x} {y} 800")).await;
    let gt = phone.ground_truth();
    assert_eq!(gt.current_screen, "home");
    assert_eq!(gt.touches.last().unwrap().kind, "long_press");
}

#[tokio::test]
async fn injection_scenarios_show_the_instruction() {
    let (sim, phone) = start().await;
    let p = sim.port();
    phone.reset("injection").unwrap();
    let gt = phone.ground_truth();
    assert_eq!(gt.overlay.as_deref(), Some("payment_sheet"));
    assert_eq!(gt.orders_placed, 1);
    assert_eq!(gt.payments_confirmed, 0);
    let a = raw_service(p, SERIAL, "exec:screencap -p").await.unwrap();
    phone.reset("payment").unwrap();
    let b = raw_service(p, SERIAL, "exec:screencap -p").await.unwrap();
    assert_ne!(a, b, "the injection note is drawn on the payment sheet");
    phone.reset("notice").unwrap();
    assert_eq!(phone.ground_truth().current_screen, "notice");
}

#[tokio::test]
async fn landscape_settings_scroll_to_delete_account() {
    let (sim, phone) = start().await;
    let p = sim.port();
    phone.reset("settings").unwrap();
    phone.set_faults(Faults {
        rotation: 1,
        ..Default::default()
    });
    assert!(
        phone
            .ground_truth()
            .element("settings.delete_account")
            .is_none()
    );
    sh(p, "input swipe 1200 900 1200 300 300").await;
    let gt = tap(p, &phone, "settings.delete_account").await;
    assert_eq!(gt.overlay.as_deref(), Some("delete_confirm"));
    let el = gt.element("delete.confirm").unwrap();
    assert!(el.bounds[3] <= 1080);
}
