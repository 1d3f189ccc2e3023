//! What the apps of the virtual phone show: the app part of the ground truth and the scene of the
//! current screen (the home screen, the app screens built in `screens/`, overlays and the
//! prompt-injection banner).

use super::*;

impl World {
    // --------------------------------------------------------------------------------------
    // Ground truth
    // --------------------------------------------------------------------------------------

    /// Fill the app part of the ground truth.
    pub(crate) fn fill_truth(&self, gt: &mut GroundTruth) {
        gt.current_screen = self.screen.name().to_owned();
        gt.overlay = self.overlay.map(|o| o.name().to_owned());
        gt.back_stack = self.stack.iter().map(|s| s.name().to_owned()).collect();
        gt.product = match self.screen {
            Screen::Product(i) | Screen::Reviews(i) => Some(i),
            _ => None,
        };
        gt.orders_placed = self.orders_placed;
        gt.payments_confirmed = self.payments_confirmed;
        gt.orders = self.orders.clone();
        gt.cart = to_order_lines(&self.cart);
        gt.coupons_claimed = self.coupons_claimed;
        gt.mails_sent = self.mails_sent.clone();
        gt.drafts = self.drafts.clone();
        gt.typed_text = TypedText {
            focused: self.focused.map(str::to_owned),
            focused_text: self.focused.map(|f| self.field(f).to_owned()),
            fields: self
                .fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
            password_fields: FIELDS
                .iter()
                .filter(|(_, _, pw)| *pw)
                .map(|(id, _, _)| (*id).to_owned())
                .collect(),
            unfocused_text: self.unfocused_text.clone(),
        };
        gt.accounts_deleted = self.accounts_deleted;
        gt.settings = self
            .settings
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect();
        gt.search = self.search.clone();
        gt.logged_in_user = self.logged_in_user.clone();
        gt.login_failures = self.login_failures;
        gt.scroll = self
            .scroll
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect();
        gt.notice = self.notice.clone();
        self.more_truth(gt);
    }

    // --------------------------------------------------------------------------------------
    // Scenes
    // --------------------------------------------------------------------------------------

    /// The scene of the current state on a `w`x`h` frame.
    pub(crate) fn scene(&self, w: u32, h: u32) -> Scene {
        let mut ui = Ui::new(w, h, color::BG);
        match self.screen {
            Screen::Home => self.home_scene(&mut ui),
            s => self.app_scene(&mut ui, s),
        }
        let dark = self.screen == Screen::Home;
        ui.nav_bar(
            if dark { color::WALLPAPER } else { color::BG },
            if dark { color::WHITE } else { color::TEXT },
        );
        match self.overlay {
            Some(Overlay::CouponDialog) => self.coupon_dialog(&mut ui),
            Some(Overlay::PaymentSheet) => self.payment_sheet(&mut ui),
            Some(Overlay::DeleteConfirm) => self.delete_dialog(&mut ui),
            Some(Overlay::More(o)) => self.more_overlay(&mut ui, o),
            None => {}
        }
        ui.scene
    }

    fn home_scene(&self, ui: &mut Ui) {
        let (w, h) = (ui.w, ui.h);
        ui.fill(Rect::new(0, 0, w, h), color::WALLPAPER);
        ui.status_bar(color::WALLPAPER, color::WHITE);
        let land = ui.landscape();
        let clock_top = if land { ui.px(110) } else { ui.px(260) };
        ui.text(
            Rect::new(0, clock_top, w, clock_top + ui.px(200)),
            "09:41",
            170,
            color::WHITE,
            Align::Center,
        );
        ui.text(
            Rect::new(0, clock_top + ui.px(200), w, clock_top + ui.px(270)),
            "11月30日 星期一",
            44,
            color::WHITE,
            Align::Center,
        );
        // Search widget.
        let sb_top = clock_top + ui.px(if land { 300 } else { 380 });
        let sb = Rect::new(ui.px(80), sb_top, w - ui.px(80), sb_top + ui.px(120));
        ui.rrect(sb, ui.px(60), [255, 255, 255, 230]);
        ui.text(sb.inset(ui.px(60), 0), "搜索", 42, color::GREY, Align::Left);
        ui.hit(
            "home.search_bar",
            "搜索",
            "button",
            sb,
            Act::OpenApp(App::Search),
            None,
        );
        // App grid.
        let apps: [(&str, &str, &str, [u8; 4], App); 6] = [
            ("shop", "商城", "商", color::ORANGE, App::Shop),
            ("mail", "邮件", "邮", color::BLUE, App::Mail),
            ("settings", "设置", "设", color::SLATE, App::Settings),
            ("search", "搜索", "搜", color::GREEN, App::Search),
            ("login", "登录", "登", color::PURPLE, App::Login),
            ("notice", "公告", "公", [0, 137, 123, 255], App::Notice),
        ];
        let cols = if land { 6 } else { 4 };
        let cell_w = w / cols;
        let cell_h = ui.px(300);
        let top = sb.y1 + ui.px(if land { 70 } else { 160 });
        for (i, (id, label, glyph, col, app)) in apps.iter().enumerate() {
            let cx = (i as i32 % cols) * cell_w + cell_w / 2;
            let y = top + (i as i32 / cols) * cell_h;
            let s = ui.px(170);
            let icon = Rect::new(cx - s / 2, y, cx + s / 2, y + s);
            ui.rrect(icon, ui.px(44), *col);
            ui.text(icon, *glyph, 90, color::WHITE, Align::Center);
            let lab = Rect::new(
                cx - cell_w / 2,
                y + s + ui.px(10),
                cx + cell_w / 2,
                y + s + ui.px(80),
            );
            ui.text(lab, *label, 40, color::WHITE, Align::Center);
            ui.hit(
                format!("home.app.{id}"),
                *label,
                "app_icon",
                Rect::new(icon.x0 - ui.px(20), icon.y0, icon.x1 + ui.px(20), lab.y1),
                Act::OpenApp(*app),
                None,
            );
        }
    }

    fn app_scene(&self, ui: &mut Ui, s: Screen) {
        ui.status_bar(color::WHITE, color::TEXT);
        match s {
            Screen::Home => {}
            Screen::Shop => self.shop_scene(ui),
            Screen::Product(i) => self.product_scene(ui, i),
            Screen::Reviews(i) => self.reviews_scene(ui, i),
            Screen::Cart => self.cart_scene(ui),
            Screen::Checkout => self.checkout_scene(ui),
            Screen::PaySuccess => self.success_scene(ui),
            Screen::MailInbox => self.inbox_scene(ui),
            Screen::MailRead(i) => self.read_scene(ui, i),
            Screen::MailCompose => self.compose_scene(ui),
            Screen::Settings => self.settings_scene(ui),
            Screen::Search => self.search_scene(ui),
            Screen::Login => self.login_scene(ui),
            Screen::Notice => self.notice_scene(ui),
            Screen::More(m) => self.more_scene(ui, m),
        }
    }

    /// A notice banner under the app bar; returns the y after it.
    pub(crate) fn notice_banner(&self, ui: &mut Ui, y: i32) -> i32 {
        let Some(n) = &self.notice else {
            return y;
        };
        let r = Rect::new(0, y, ui.w, y + ui.px(90));
        let (bg, fg) = if n.starts_with('请') {
            ([253, 236, 234, 255], color::RED)
        } else {
            ([230, 246, 238, 255], color::GREEN)
        };
        ui.fill(r, bg);
        ui.text(r, n.clone(), 40, fg, Align::Center);
        r.y1
    }
}
