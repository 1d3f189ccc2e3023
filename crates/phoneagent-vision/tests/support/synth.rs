//! Real-app-like renders made here with real fonts (WenQuanYi Micro Hei for Chinese, DejaVu
//! Sans for English): font sizes from 24 to 56 px, coloured buttons, white on red, dark mode,
//! Traditional Chinese, dialogs whose button is a bare 确定 / Yes, an icon-only button.

use ab_glyph::{Font, FontVec, PxScale, ScaleFont};
use image::{Rgba, RgbaImage};

use super::Case;

type Rgb = [u8; 3];

pub struct Fonts {
    pub cjk: FontVec,
    pub latin: FontVec,
}

pub fn fonts() -> Fonts {
    let cjk_path = phoneagent_sim::font_path().expect("a CJK font (fonts-wqy-microhei)");
    let cjk = FontVec::try_from_vec_and_index(std::fs::read(&cjk_path).unwrap(), 0).unwrap();
    let latin_path = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
    let latin = match std::fs::read(latin_path) {
        Ok(b) => FontVec::try_from_vec(b).unwrap(),
        Err(_) => FontVec::try_from_vec_and_index(std::fs::read(&cjk_path).unwrap(), 0).unwrap(),
    };
    Fonts { cjk, latin }
}

pub struct Canvas {
    pub img: RgbaImage,
}

impl Canvas {
    pub fn new(w: u32, h: u32, bg: Rgb) -> Canvas {
        Canvas {
            img: RgbaImage::from_pixel(w, h, Rgba([bg[0], bg[1], bg[2], 255])),
        }
    }

    pub fn rrect(&mut self, x0: u32, y0: u32, x1: u32, y1: u32, r: u32, c: Rgb) {
        for y in y0..y1.min(self.img.height()) {
            for x in x0..x1.min(self.img.width()) {
                let dx = if x < x0 + r {
                    x0 + r - x
                } else if x + r >= x1 {
                    x + r + 1 - x1
                } else {
                    0
                };
                let dy = if y < y0 + r {
                    y0 + r - y
                } else if y + r >= y1 {
                    y + r + 1 - y1
                } else {
                    0
                };
                if dx * dx + dy * dy <= r * r {
                    self.img.put_pixel(x, y, Rgba([c[0], c[1], c[2], 255]));
                }
            }
        }
    }

    /// Darken everything by a 50 % black scrim (a modal backdrop).
    pub fn scrim(&mut self) {
        for p in self.img.pixels_mut() {
            for i in 0..3 {
                p.0[i] /= 2;
            }
        }
    }

    /// Draw `text` centred at (cx, cy) with glyphs `size` px.
    pub fn text(&mut self, font: &FontVec, text: &str, size: f32, c: Rgb, cx: u32, cy: u32) {
        let sf = font.as_scaled(PxScale::from(size));
        let width: f32 = text.chars().map(|ch| sf.h_advance(font.glyph_id(ch))).sum();
        let mut x = cx as f32 - width / 2.0;
        let base = cy as f32 + (sf.ascent() + sf.descent()) / 2.0;
        for ch in text.chars() {
            let id = font.glyph_id(ch);
            let g = id.with_scale_and_position(PxScale::from(size), ab_glyph::point(x, base));
            if let Some(o) = font.outline_glyph(g) {
                let b = o.px_bounds();
                let img = &mut self.img;
                o.draw(|gx, gy, cov| {
                    let (px, py) = (b.min.x as i32 + gx as i32, b.min.y as i32 + gy as i32);
                    if px < 0 || py < 0 || px >= img.width() as i32 || py >= img.height() as i32 {
                        return;
                    }
                    let p = img.get_pixel_mut(px as u32, py as u32);
                    for (d, s) in p.0.iter_mut().zip(c) {
                        *d = (f32::from(*d) * (1.0 - cov) + f32::from(s) * cov).round() as u8;
                    }
                });
            }
            x += sf.h_advance(id);
        }
    }
}

const W: u32 = 1080;
const H: u32 = 2400;

fn page(bg: Rgb, bar: Rgb, title: &str, title_c: Rgb, f: &Fonts) -> Canvas {
    let mut c = Canvas::new(W, H, bg);
    c.rrect(0, 80, W, 230, 0, bar);
    c.text(&f.cjk, title, 50.0, title_c, W / 2, 155);
    c
}

/// The synthetic cases: (name, frame, point, expected label — alternatives split by `|`;
/// empty = an icon, no text).
pub fn cases() -> Vec<Case> {
    let f = fonts();
    let mut out = Vec::new();
    let mut push = |name: &str, c: Canvas, p: (u32, u32), expect: &str| {
        out.push(Case {
            name: format!("synth/{name}"),
            image: c.img,
            point: p,
            expect: expect.to_owned(),
        });
    };
    // 1. Large orange buy button.
    let mut c = page(
        [245, 245, 245],
        [255, 255, 255],
        "商品详情",
        [30, 30, 30],
        &f,
    );
    c.rrect(560, 2200, 1040, 2330, 65, [255, 68, 0]);
    c.text(&f.cjk, "立即购买", 56.0, [255, 255, 255], 800, 2265);
    c.rrect(40, 2200, 520, 2330, 65, [255, 170, 0]);
    c.text(&f.cjk, "加入购物车", 48.0, [255, 255, 255], 280, 2265);
    push("zh_buy_now_56px", c, (800, 2265), "立即购买");
    // 2. Small white-on-red delete chip.
    let mut c = page(
        [255, 255, 255],
        [255, 255, 255],
        "我的收藏",
        [30, 30, 30],
        &f,
    );
    c.rrect(880, 600, 1040, 680, 12, [230, 40, 40]);
    c.text(&f.cjk, "删除", 28.0, [255, 255, 255], 960, 640);
    c.text(&f.cjk, "蓝牙耳机 黑色", 36.0, [40, 40, 40], 300, 640);
    push("zh_delete_white_on_red_28px", c, (960, 640), "删除");
    // 3. Dark mode English button.
    let mut c = page([18, 18, 18], [28, 28, 30], "Account", [235, 235, 235], &f);
    c.rrect(60, 1500, 1020, 1640, 24, [48, 48, 52]);
    c.text(&f.latin, "Delete account", 40.0, [255, 90, 90], 540, 1570);
    push(
        "en_dark_delete_account_40px",
        c,
        (540, 1570),
        "Delete account",
    );
    // 4. Traditional Chinese pay button.
    let mut c = page(
        [245, 245, 245],
        [255, 255, 255],
        "確認訂單",
        [30, 30, 30],
        &f,
    );
    c.rrect(50, 2180, 1030, 2320, 24, [22, 119, 255]);
    c.text(&f.cjk, "確認支付", 46.0, [255, 255, 255], 540, 2250);
    // chi_sim reads the Traditional glyphs as their Simplified forms; the gate folds Traditional
    // to Simplified before matching, so either form is the label.
    push(
        "zh_hant_confirm_pay_46px",
        c,
        (540, 2250),
        "確認支付|确认支付",
    );
    // 5. English green Place order.
    let mut c = page(
        [250, 250, 250],
        [255, 255, 255],
        "Checkout",
        [30, 30, 30],
        &f,
    );
    c.rrect(600, 2200, 1040, 2330, 20, [0, 150, 90]);
    c.text(&f.latin, "Place order", 40.0, [255, 255, 255], 820, 2265);
    c.text(&f.latin, "Total $42.99", 40.0, [30, 30, 30], 260, 2265);
    push("en_place_order_40px", c, (820, 2265), "Place order");
    // 6. Dialog with a bare "Yes": text-only buttons.
    let mut c = page([245, 245, 245], [255, 255, 255], "Orders", [30, 30, 30], &f);
    c.scrim();
    c.rrect(90, 950, 990, 1450, 36, [255, 255, 255]);
    c.text(
        &f.latin,
        "Cancel your order?",
        48.0,
        [20, 20, 20],
        540,
        1040,
    );
    c.text(
        &f.latin,
        "This cannot be undone.",
        36.0,
        [100, 100, 100],
        540,
        1150,
    );
    c.text(&f.latin, "No", 40.0, [22, 119, 255], 330, 1360);
    c.text(&f.latin, "Yes", 40.0, [22, 119, 255], 750, 1360);
    push("en_dialog_bare_yes", c, (750, 1360), "Yes");
    // 7. Dark dialog with 确定 in red.
    let mut c = page([18, 18, 18], [28, 28, 30], "回收站", [235, 235, 235], &f);
    c.scrim();
    c.rrect(90, 950, 990, 1450, 36, [44, 44, 48]);
    c.text(&f.cjk, "清空回收站？", 50.0, [240, 240, 240], 540, 1040);
    c.text(
        &f.cjk,
        "清空后文件将无法恢复",
        38.0,
        [170, 170, 170],
        540,
        1150,
    );
    c.rrect(130, 1300, 520, 1410, 20, [70, 70, 76]);
    c.text(&f.cjk, "取消", 42.0, [230, 230, 230], 325, 1355);
    c.rrect(560, 1300, 950, 1410, 20, [220, 50, 50]);
    c.text(&f.cjk, "确定", 42.0, [255, 255, 255], 755, 1355);
    push("zh_dark_dialog_ok_red", c, (755, 1355), "确定");
    // 8. Small grey list row.
    let mut c = page([245, 245, 245], [255, 255, 255], "设置", [30, 30, 30], &f);
    c.rrect(0, 1200, W, 1330, 0, [255, 255, 255]);
    c.text(&f.cjk, "退出登录", 24.0, [120, 120, 120], 540, 1265);
    push("zh_logout_row_24px_grey", c, (540, 1265), "退出登录");
    // 9. Subscription gold button with dark text.
    let mut c = page(
        [255, 250, 240],
        [255, 255, 255],
        "会员中心",
        [30, 30, 30],
        &f,
    );
    c.rrect(60, 2100, 1020, 2240, 70, [255, 200, 60]);
    c.text(&f.cjk, "¥25/月 立即开通", 44.0, [90, 50, 0], 540, 2170);
    push("zh_subscribe_gold_44px", c, (540, 2170), "¥25/月立即开通");
    // 10. Icon-only send (a paper-plane triangle) in the top bar.
    let mut c = page([255, 255, 255], [255, 255, 255], "写邮件", [30, 30, 30], &f);
    for y in 120..190u32 {
        let half = (y - 120) / 2;
        for x in 960 - half..=960 + half {
            c.img.put_pixel(x, 310 - y, Rgba([22, 119, 255, 255]));
        }
    }
    push("icon_send_unreadable", c, (960, 155), "");
    // 11. Bottom bar with a red checkout button with a count.
    let mut c = page([245, 245, 245], [255, 255, 255], "购物车", [30, 30, 30], &f);
    c.rrect(0, 2180, W, 2352, 0, [255, 255, 255]);
    c.text(&f.cjk, "合计 ¥1299", 44.0, [255, 80, 0], 250, 2266);
    c.rrect(700, 2200, 1040, 2332, 66, [230, 40, 40]);
    c.text(&f.cjk, "结算(3)", 44.0, [255, 255, 255], 870, 2266);
    push("zh_cart_checkout_count", c, (870, 2266), "结算(3)");
    // 12. English on a dark grey button.
    let mut c = page([250, 250, 250], [255, 255, 255], "Trash", [30, 30, 30], &f);
    c.rrect(300, 1800, 780, 1920, 16, [60, 64, 72]);
    c.text(&f.latin, "Empty trash", 34.0, [255, 255, 255], 540, 1860);
    push("en_empty_trash_34px", c, (540, 1860), "Empty trash");
    out
}
