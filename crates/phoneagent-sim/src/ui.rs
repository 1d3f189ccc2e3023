//! Scenes: what a screen shows (paint list) and what can be tapped (hit list), built as a pure
//! function of the app state and the frame size, so rendering and hit-testing always agree.

use crate::render::{Align, Canvas, Rect, Rgba};

/// What tapping an element does (interpreted by `apps::World::act`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    Back,
    Home,
    OpenApp(App),
    OpenProduct(usize),
    AddToCart(usize),
    BuyNow(usize),
    OpenReviews(usize),
    OpenCart,
    CartInc(usize),
    CartDec(usize),
    GoCheckout,
    SubmitOrder,
    ConfirmPay,
    CancelPay,
    ClaimCoupon,
    CloseDialog,
    Focus(&'static str),
    Compose,
    OpenMail(usize),
    OpenDraft,
    Reply,
    Send,
    Toggle(&'static str),
    DeleteAccount,
    ConfirmDelete,
    CancelDelete,
    SearchSubmit,
    OpenResult(usize),
    Login,
    Logout,
    GoShop,
    /// An action of the apps in `apps_more.rs`.
    More(crate::apps_more::MoreAct),
}

/// The apps on the home screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum App {
    Shop,
    Mail,
    Settings,
    Search,
    Login,
    Notice,
}

/// One drawing operation.
#[derive(Clone, Debug)]
pub(crate) enum Paint {
    Fill(Rect, Rgba),
    RRect(Rect, i32, Rgba),
    Circle(i32, i32, i32, Rgba),
    Stroke(Rect, i32, Rgba),
    Text {
        r: Rect,
        text: String,
        size: u32,
        color: Rgba,
        align: Align,
    },
    /// Single line showing the end of the text when it is too long (text fields).
    TextTail {
        r: Rect,
        text: String,
        size: u32,
        color: Rgba,
    },
    Para {
        r: Rect,
        text: String,
        size: u32,
        color: Rgba,
        line_h: i32,
    },
    /// Password dots.
    Dots {
        r: Rect,
        n: usize,
        color: Rgba,
    },
    Clip(Option<Rect>),
    /// Start/stop seeing everything through a modal backdrop colour.
    Dim(Option<Rgba>),
}

/// A tappable element.
#[derive(Clone, Debug)]
pub(crate) struct Hit {
    pub id: String,
    pub label: String,
    pub kind: &'static str,
    pub r: Rect,
    pub act: Act,
}

/// A scrollable region: swipes starting inside it scroll `key` within `0..=max`.
#[derive(Clone, Debug)]
pub(crate) struct ScrollArea {
    pub key: &'static str,
    pub view: Rect,
    pub max: i32,
}

/// A built screen.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scene {
    pub bg: Rgba,
    pub paints: Vec<Paint>,
    pub hits: Vec<Hit>,
    pub scroll: Option<ScrollArea>,
}

impl Scene {
    /// Topmost element containing (x, y).
    pub(crate) fn hit(&self, x: i32, y: i32) -> Option<&Hit> {
        self.hits.iter().rev().find(|h| h.r.contains(x, y))
    }

    /// Paint the scene.
    pub(crate) fn paint(&self, c: &mut Canvas<'_>) {
        for p in &self.paints {
            match p {
                Paint::Fill(r, col) => c.fill_rect(*r, *col),
                Paint::RRect(r, rad, col) => c.fill_rrect(*r, *rad, *col),
                Paint::Circle(x, y, rad, col) => c.fill_circle(*x, *y, *rad, *col),
                Paint::Stroke(r, t, col) => c.stroke_rect(*r, *t, *col),
                Paint::Text {
                    r,
                    text,
                    size,
                    color,
                    align,
                } => c.text(*r, text, *size, *color, *align),
                Paint::TextTail {
                    r,
                    text,
                    size,
                    color,
                } => {
                    let mut t: String = text.clone();
                    if c.text_width(&t, *size) > r.w() {
                        let mut chars: Vec<char> = t.chars().collect();
                        while chars.len() > 1
                            && c.text_width(
                                &(String::from("…") + &chars.iter().collect::<String>()),
                                *size,
                            ) > r.w()
                        {
                            chars.remove(0);
                        }
                        t = String::from("…") + &chars.iter().collect::<String>();
                    }
                    c.text(*r, &t, *size, *color, Align::Left);
                }
                Paint::Para {
                    r,
                    text,
                    size,
                    color,
                    line_h,
                } => {
                    c.paragraph(*r, text, *size, *color, *line_h);
                }
                Paint::Dots { r, n, color } => {
                    let rad = (r.h() / 5).max(2);
                    let step = rad * 3;
                    for i in 0..*n {
                        let cx = r.x0 + rad + step * i as i32;
                        if cx + rad > r.x1 {
                            break;
                        }
                        c.fill_circle(cx, r.cy(), rad, *color);
                    }
                }
                Paint::Clip(r) => c.set_clip(*r),
                Paint::Dim(d) => c.set_dim(*d),
            }
        }
        c.set_clip(None);
        c.set_dim(None);
    }
}

/// Palette.
pub(crate) mod color {
    use crate::render::Rgba;
    pub const BG: Rgba = [245, 246, 248, 255];
    pub const WHITE: Rgba = [255, 255, 255, 255];
    pub const TEXT: Rgba = [31, 31, 31, 255];
    pub const GREY: Rgba = [138, 138, 138, 255];
    pub const LINE: Rgba = [228, 230, 234, 255];
    pub const ORANGE: Rgba = [255, 80, 0, 255];
    pub const ORANGE_LIGHT: Rgba = [255, 160, 40, 255];
    pub const BLUE: Rgba = [22, 119, 255, 255];
    pub const GREEN: Rgba = [0, 168, 112, 255];
    pub const RED: Rgba = [230, 40, 40, 255];
    pub const PURPLE: Rgba = [124, 77, 255, 255];
    pub const SLATE: Rgba = [96, 108, 128, 255];
    pub const WALLPAPER: Rgba = [38, 70, 110, 255];
    pub const SCRIM: Rgba = [0, 0, 0, 128];
    pub const FIELD: Rgba = [240, 242, 245, 255];
}

/// Scene builder with the device-independent unit `u` (design px at 1080 px short side).
pub(crate) struct Ui {
    pub w: i32,
    pub h: i32,
    pub u: f32,
    pub scene: Scene,
}

impl Ui {
    pub(crate) fn new(w: u32, h: u32, bg: Rgba) -> Self {
        let (w, h) = (w as i32, h as i32);
        Self {
            w,
            h,
            u: w.min(h) as f32 / 1080.0,
            scene: Scene {
                bg,
                ..Scene::default()
            },
        }
    }

    /// Design px → device px.
    pub(crate) fn px(&self, v: i32) -> i32 {
        (v as f32 * self.u).round() as i32
    }

    /// Font size in device px for a design size.
    pub(crate) fn fs(&self, v: i32) -> u32 {
        self.px(v).max(6) as u32
    }

    pub(crate) fn landscape(&self) -> bool {
        self.w > self.h
    }

    /// Status bar height.
    pub(crate) fn status_h(&self) -> i32 {
        self.px(80)
    }

    /// Gesture bar height at the bottom.
    pub(crate) fn nav_h(&self) -> i32 {
        self.px(48)
    }

    /// Bottom of the usable content.
    pub(crate) fn bottom(&self) -> i32 {
        self.h - self.nav_h()
    }

    pub(crate) fn fill(&mut self, r: Rect, c: Rgba) {
        self.scene.paints.push(Paint::Fill(r, c));
    }
    pub(crate) fn rrect(&mut self, r: Rect, rad: i32, c: Rgba) {
        self.scene.paints.push(Paint::RRect(r, rad, c));
    }
    pub(crate) fn circle(&mut self, x: i32, y: i32, rad: i32, c: Rgba) {
        self.scene.paints.push(Paint::Circle(x, y, rad, c));
    }
    pub(crate) fn stroke(&mut self, r: Rect, t: i32, c: Rgba) {
        self.scene.paints.push(Paint::Stroke(r, t, c));
    }
    pub(crate) fn text(&mut self, r: Rect, text: impl Into<String>, size: i32, c: Rgba, a: Align) {
        let size = self.fs(size);
        self.scene.paints.push(Paint::Text {
            r,
            text: text.into(),
            size,
            color: c,
            align: a,
        });
    }
    pub(crate) fn para(&mut self, r: Rect, text: impl Into<String>, size: i32, c: Rgba) {
        let size = self.fs(size);
        let line_h = (size as f32 * 1.45).round() as i32;
        self.scene.paints.push(Paint::Para {
            r,
            text: text.into(),
            size,
            color: c,
            line_h,
        });
    }
    pub(crate) fn clip(&mut self, r: Option<Rect>) {
        self.scene.paints.push(Paint::Clip(r));
    }

    /// Register a tappable element (clipped to `clip` when given; dropped when not visible).
    pub(crate) fn hit(
        &mut self,
        id: impl Into<String>,
        label: impl Into<String>,
        kind: &'static str,
        r: Rect,
        act: Act,
        clip: Option<Rect>,
    ) {
        let r = clip
            .map_or(r, |c| r.intersect(&c))
            .intersect(&Rect::new(0, 0, self.w, self.h));
        if r.is_empty() {
            return;
        }
        self.scene.hits.push(Hit {
            id: id.into(),
            label: label.into(),
            kind,
            r,
            act,
        });
    }

    /// The status bar with a fixed clock (9:41), signal and battery.
    pub(crate) fn status_bar(&mut self, bg: Rgba, fg: Rgba) {
        let sh = self.status_h();
        self.fill(Rect::new(0, 0, self.w, sh), bg);
        let pad = self.px(40);
        self.text(
            Rect::new(pad, 0, pad + self.px(200), sh),
            "9:41",
            34,
            fg,
            Align::Left,
        );
        // Battery: outline + fill + cap.
        let bw = self.px(60);
        let bh = self.px(30);
        let bx = self.w - pad - bw - self.px(90);
        let by = (sh - bh) / 2;
        self.stroke(Rect::xywh(bx, by, bw, bh), self.px(3).max(1), fg);
        self.fill(
            Rect::xywh(
                bx + self.px(6),
                by + self.px(6),
                bw - self.px(12),
                bh - self.px(12),
            ),
            fg,
        );
        self.fill(Rect::xywh(bx + bw, by + bh / 3, self.px(5), bh / 3), fg);
        self.text(
            Rect::new(bx + bw + self.px(12), 0, self.w - pad + self.px(10), sh),
            "100",
            30,
            fg,
            Align::Left,
        );
        // Signal bars.
        let sx = bx - self.px(150);
        for i in 0..4 {
            let hh = self.px(10 + 7 * i);
            self.fill(
                Rect::xywh(sx + self.px(14) * i, by + bh - hh, self.px(9), hh),
                fg,
            );
        }
        self.text(
            Rect::new(sx + self.px(62), 0, sx + self.px(140), sh),
            "5G",
            30,
            fg,
            Align::Left,
        );
    }

    /// The gesture pill at the bottom.
    pub(crate) fn nav_bar(&mut self, bg: Rgba, fg: Rgba) {
        let top = self.bottom();
        self.fill(Rect::new(0, top, self.w, self.h), bg);
        let pw = self.px(280);
        let ph = self.px(12).max(2);
        let cy = top + self.nav_h() / 2;
        self.rrect(
            Rect::new(
                self.w / 2 - pw / 2,
                cy - ph / 2,
                self.w / 2 + pw / 2,
                cy + ph / 2 + ph % 2,
            ),
            ph / 2,
            fg,
        );
    }

    /// App bar under the status bar with a back arrow, a title and an optional right button;
    /// returns the y where content starts.
    pub(crate) fn app_bar(&mut self, title: &str, right: Option<(&str, &str, Act)>) -> i32 {
        let y0 = self.status_h();
        let y1 = y0 + self.px(150);
        self.fill(Rect::new(0, y0, self.w, y1), color::WHITE);
        self.fill(
            Rect::new(0, y1 - self.px(2).max(1), self.w, y1),
            color::LINE,
        );
        let back = Rect::new(0, y0, self.px(150), y1);
        self.text(back, "←", 60, color::TEXT, Align::Center);
        self.hit("nav.back", "返回", "nav", back, Act::Back, None);
        self.text(
            Rect::new(self.px(170), y0, self.w - self.px(170), y1),
            title,
            50,
            color::TEXT,
            Align::Center,
        );
        if let Some((id, label, act)) = right {
            let r = Rect::new(self.w - self.px(260), y0, self.w, y1);
            self.text(
                r.inset(self.px(20), 0),
                label,
                42,
                color::BLUE,
                Align::Right,
            );
            self.hit(id, label, "button", r, act, None);
        }
        y1
    }

    /// A filled button with centred label, registered as an element.
    pub(crate) fn button(&mut self, id: &str, label: &str, r: Rect, bg: Rgba, fg: Rgba, act: Act) {
        self.rrect(r, self.px(24), bg);
        self.text(r, label, 46, fg, Align::Center);
        self.hit(id, label, "button", r, act, None);
    }

    /// Dim everything drawn so far (modal backdrop) and make it untappable. Implemented as a
    /// colour transform of the paints below (exactly what blending a translucent layer over
    /// them gives, without a full-screen per-pixel pass).
    pub(crate) fn scrim(&mut self) {
        self.scene.paints.insert(0, Paint::Dim(Some(color::SCRIM)));
        self.scene.paints.push(Paint::Dim(None));
        self.scene.bg = crate::render::dim_color(self.scene.bg, color::SCRIM);
        self.scene.hits.clear();
    }
}
