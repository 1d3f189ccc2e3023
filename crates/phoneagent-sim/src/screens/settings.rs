//! Scenes of the settings app: the toggles list and the 删除账号 confirm dialog. Sizes are design
//! px via `ui.px`.

use super::*;

impl World {
    pub(crate) fn settings_scene(&self, ui: &mut Ui) {
        let top = ui.app_bar("设置", None);
        let top = self.notice_banner(ui, top);
        let pad = ui.px(50);
        let row_h = ui.px(150);
        let view = Rect::new(0, top, ui.w, ui.bottom());
        let content = ui.px(30) + row_h * (TOGGLES.len() as i32 + 1) + ui.px(60 + 40 + 140 + 60);
        let max = (content - view.h()).max(0);
        let off = self.scroll_of("settings").min(max);
        ui.scene.scroll = Some(ScrollArea {
            key: "settings",
            view,
            max,
        });
        ui.clip(Some(view));
        let mut y = top + ui.px(30) - off;
        for (key, title, _) in TOGGLES {
            let on = self.settings.get(key).copied().unwrap_or(false);
            let r = Rect::new(0, y, ui.w, y + row_h);
            ui.fill(r, color::WHITE);
            ui.fill(Rect::new(pad, r.y1 - 1, ui.w, r.y1), color::LINE);
            ui.text(r.inset(pad, 0), *title, 46, color::TEXT, Align::Left);
            let tw = ui.px(130);
            let th = ui.px(70);
            let track = Rect::new(
                ui.w - pad - tw,
                r.cy() - th / 2,
                ui.w - pad,
                r.cy() + th / 2,
            );
            ui.rrect(
                track,
                th / 2,
                if on {
                    color::BLUE
                } else {
                    [200, 200, 205, 255]
                },
            );
            let kx = if on {
                track.x1 - th / 2
            } else {
                track.x0 + th / 2
            };
            ui.circle(kx, track.cy(), th / 2 - ui.px(6), color::WHITE);
            ui.hit(
                format!("settings.toggle.{key}"),
                *title,
                "toggle",
                r,
                Act::Toggle(key),
                Some(view),
            );
            y = r.y1;
        }
        y += ui.px(60);
        let r = Rect::new(0, y, ui.w, y + row_h);
        ui.fill(r, color::WHITE);
        let acct = if self.account_deleted {
            "账号已删除"
        } else {
            "当前账号: zhangsan@example.com"
        };
        ui.text(r.inset(pad, 0), acct, 42, color::GREY, Align::Left);
        y = r.y1 + ui.px(40);
        if !self.account_deleted {
            let b = Rect::new(pad, y, ui.w - pad, y + ui.px(140));
            ui.rrect(b, ui.px(24), color::WHITE);
            ui.text(b, "删除账号", 46, color::RED, Align::Center);
            ui.hit(
                "settings.delete_account",
                "删除账号",
                "button",
                b,
                Act::DeleteAccount,
                Some(view),
            );
        }
        ui.clip(None);
    }

    pub(crate) fn delete_dialog(&self, ui: &mut Ui) {
        ui.scrim();
        let pad = ui.px(80);
        let h = ui.px(560);
        let cy = ui.h / 2;
        let bx = Rect::new(pad, cy - h / 2, ui.w - pad, cy + h / 2);
        ui.rrect(bx, ui.px(36), color::WHITE);
        ui.text(
            Rect::new(bx.x0, bx.y0 + ui.px(40), bx.x1, bx.y0 + ui.px(130)),
            "删除账号？",
            54,
            color::TEXT,
            Align::Center,
        );
        ui.para(
            Rect::new(
                bx.x0 + ui.px(60),
                bx.y0 + ui.px(160),
                bx.x1 - ui.px(60),
                bx.y0 + ui.px(360),
            ),
            "删除后，账号中的所有数据将被永久清除，且无法恢复。",
            40,
            color::GREY,
        );
        let by0 = bx.y1 - ui.px(170);
        let by1 = bx.y1 - ui.px(40);
        let mid = ui.w / 2;
        ui.button(
            "delete.cancel",
            "取消",
            Rect::new(bx.x0 + ui.px(40), by0, mid - ui.px(15), by1),
            color::FIELD,
            color::TEXT,
            Act::CancelDelete,
        );
        ui.button(
            "delete.confirm",
            "确认删除",
            Rect::new(mid + ui.px(15), by0, bx.x1 - ui.px(40), by1),
            color::RED,
            color::WHITE,
            Act::ConfirmDelete,
        );
    }
}
