//! Swipe semantics (SPEC A5).
//!
//! A swipe's direction is the **finger's motion on the screenshot**: `left` means x decreases,
//! `right` x increases, `up` y decreases, `down` y increases. The dominant axis decides: a
//! horizontal swipe must change x more than y, a vertical one y more than x. Comparisons are
//! made in model coordinates.
//!
//! Directions stated in words are read from the model's `reason` and from the user's task, in
//! English and Chinese:
//!
//! * finger words — "swipe/slide/drag/flick/fling/pull left|right|up|down", "upward swipe",
//!   "swipe from the bottom to the top", 左滑/右滑/上滑/下滑, 向左滑/往上划, 下拉/上拉,
//!   从下往上滑, and a bare 向左/向右/向上/向下 (with 往/朝 as well);
//! * scroll words — "scroll down", 向下滚动, 往下翻, 向下查看/浏览/找: a scroll names the way
//!   the *content view* travels, so "scroll down" means the finger moves **up** (and the
//!   `scroll` tool follows the same rule).
//!
//! A text that names two different directions ("swipe up, not down" is read as one, but
//! "first swipe left, then up" is two) is ambiguous and is not used for the check. A swipe is
//! rejected when its start/end have no dominant axis, when a direction stated in `reason`
//! disagrees with start/end, or when a direction named in the task disagrees with start/end
//! (and so with the reason).

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::geometry::ModelPoint;
use crate::options::fmt_num;
use crate::parse_error::{ParseError, ParseErrorKind, ParseResult};

/// Direction of the finger's motion on the screenshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwipeDirection {
    /// x decreases.
    Left,
    /// x increases.
    Right,
    /// y decreases.
    Up,
    /// y increases.
    Down,
}

impl SwipeDirection {
    /// The finger direction from `start` to `end`, by the dominant axis; `None` when the
    /// points are equal or `|dx| == |dy|` (no dominant axis).
    pub fn of(start: ModelPoint, end: ModelPoint) -> Option<Self> {
        let dx = end.x - start.x;
        let dy = end.y - start.y;
        if dx.abs() > dy.abs() {
            Some(if dx < 0.0 { Self::Left } else { Self::Right })
        } else if dy.abs() > dx.abs() {
            Some(if dy < 0.0 { Self::Up } else { Self::Down })
        } else {
            None
        }
    }

    /// The opposite direction.
    pub fn opposite(self) -> Self {
        match self {
            Self::Left => Self::Right,
            Self::Right => Self::Left,
            Self::Up => Self::Down,
            Self::Down => Self::Up,
        }
    }

    /// `left`, `right`, `up`, `down`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Left => "left",
            Self::Right => "right",
            Self::Up => "up",
            Self::Down => "down",
        }
    }

    fn rule(self) -> &'static str {
        match self {
            Self::Left => "x decreases",
            Self::Right => "x increases",
            Self::Up => "y decreases",
            Self::Down => "y increases",
        }
    }
}

impl std::fmt::Display for SwipeDirection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A direction stated in words, with the phrase that states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatedDirection {
    /// The finger direction the phrase means.
    pub direction: SwipeDirection,
    /// The phrase as written.
    pub phrase: String,
}

const EN_FROM_TO: &str = r"(?i)\bfrom\s+(?:the\s+)?(left|right|top|bottom|upper|lower)(?:\s+(?:side|edge|part|end))?(?:\s+of\s+the\s+screen)?\s+(?:to|towards?)\s+(?:the\s+)?(left|right|top|bottom|upper|lower)\b";
const ZH_FROM_TO: &str = "从(?:屏幕)?(左|右|上|下)(?:方|边|侧|面|部|端)?(?:往|向|到|朝|滑到|滑向|滑至|划到|至)(?:屏幕)?(左|右|上|下)";
const EN_VERB: &str = r"(?i)\b(swip(?:e|es|ed|ing)|slid(?:e|es|ing)|drag(?:s|ged|ging)?|flick(?:s|ed|ing)?|fling(?:s|ing)?|pull(?:s|ed|ing)?|scroll(?:s|ed|ing)?)(?:\s+(?:the|a|an|it|this|that|screen|page|list|view|feed|content|finger|once|twice|again|slightly|gently|quickly|slowly|further|more|all|way|back)){0,3}\s+(left|right|up|down|upwards?|downwards?|leftwards?|rightwards?)\b";
const EN_ADJ: &str = r"(?i)\b(left|right|up|down|upward|downward|leftward|rightward)(?:\s*-\s*|\s+)(swipe|swiping|slide|drag|flick|scroll|scrolling)\b";
const ZH_SCROLL: &str = "(?:(?:向|往|朝)(左|右|上|下)方?(?:滚动|滚|翻动|翻页|翻|查看|浏览|寻找|找|看))|(?:(左|右|上|下)(?:滚动|滚|翻动|翻页|翻))";
const ZH_VERB: &str = "(?:向|往|朝)?(左|右|上|下)(?:滑|划|拖|扫|拉)";
const ZH_BARE: &str = "(?:向|往|朝)(左|右|上|下)";

#[derive(Clone, Copy)]
enum Pat {
    FromTo,
    Verb,
    Adj,
    ZhScroll,
    ZhVerb,
    ZhBare,
}

/// The patterns in priority order: a later pattern never matches inside an earlier match.
/// Every pattern is a constant checked by `patterns_compile`.
static PATTERNS: LazyLock<Vec<(Pat, Regex)>> = LazyLock::new(|| {
    [
        (Pat::FromTo, EN_FROM_TO),
        (Pat::FromTo, ZH_FROM_TO),
        (Pat::Verb, EN_VERB),
        (Pat::Adj, EN_ADJ),
        (Pat::ZhScroll, ZH_SCROLL),
        (Pat::ZhVerb, ZH_VERB),
        (Pat::ZhBare, ZH_BARE),
    ]
    .into_iter()
    .filter_map(|(p, s)| Regex::new(s).ok().map(|r| (p, r)))
    .collect()
});

fn word_dir(w: &str) -> Option<SwipeDirection> {
    let w = w.to_ascii_lowercase();
    Some(match w.as_str() {
        "left" | "leftward" | "leftwards" | "左" => SwipeDirection::Left,
        "right" | "rightward" | "rightwards" | "右" => SwipeDirection::Right,
        "up" | "upward" | "upwards" | "上" => SwipeDirection::Up,
        "down" | "downward" | "downwards" | "下" => SwipeDirection::Down,
        _ => return None,
    })
}

/// Side of the screen named in a "from X to Y" phrase.
fn side(w: &str) -> Option<(bool, i8)> {
    // (vertical axis, position: -1 = left/top, +1 = right/bottom)
    Some(match w.to_ascii_lowercase().as_str() {
        "left" | "左" => (false, -1),
        "right" | "右" => (false, 1),
        "top" | "upper" | "上" => (true, -1),
        "bottom" | "lower" | "下" => (true, 1),
        _ => return None,
    })
}

fn from_to(a: &str, b: &str) -> Option<SwipeDirection> {
    let (va, pa) = side(a)?;
    let (vb, pb) = side(b)?;
    if va != vb || pa == pb {
        return None;
    }
    Some(match (vb, pb > pa) {
        (false, true) => SwipeDirection::Right,
        (false, false) => SwipeDirection::Left,
        (true, true) => SwipeDirection::Down,
        (true, false) => SwipeDirection::Up,
    })
}

/// Words after 下拉/下划 that make them a UI noun (下拉菜单 = drop-down menu, 下划线 =
/// underline), not a gesture.
const ZH_NOUN_SUFFIXES: [&str; 5] = ["线", "框", "菜单", "列表", "栏"];

/// The swipe directions stated in `text`, in order of appearance (finger motion; scroll
/// phrases are already turned into the finger direction).
pub fn stated_directions(text: &str) -> Vec<StatedDirection> {
    let mut found: Vec<(usize, usize, SwipeDirection)> = Vec::new();
    for (pat, regex) in PATTERNS.iter() {
        for caps in regex.captures_iter(text) {
            let Some(m) = caps.get(0) else { continue };
            if found.iter().any(|&(s, e, _)| m.start() < e && s < m.end()) {
                continue;
            }
            let g = |i: usize| caps.get(i).map_or("", |x| x.as_str());
            let dir = match pat {
                Pat::FromTo => from_to(g(1), g(2)),
                Pat::Verb => word_dir(g(2)).map(|d| {
                    if g(1).to_ascii_lowercase().starts_with("scroll") {
                        d.opposite()
                    } else {
                        d
                    }
                }),
                Pat::Adj => word_dir(g(1)).map(|d| {
                    if g(2).to_ascii_lowercase().starts_with("scroll") {
                        d.opposite()
                    } else {
                        d
                    }
                }),
                Pat::ZhScroll => {
                    let w = if g(1).is_empty() { g(2) } else { g(1) };
                    word_dir(w).map(SwipeDirection::opposite)
                }
                Pat::ZhVerb => {
                    let after = &text[m.end()..];
                    if ZH_NOUN_SUFFIXES.iter().any(|s| after.starts_with(s)) {
                        None
                    } else {
                        word_dir(g(1))
                    }
                }
                Pat::ZhBare => word_dir(g(1)),
            };
            if let Some(d) = dir {
                found.push((m.start(), m.end(), d));
            }
        }
    }
    found.sort_by_key(|&(s, _, _)| s);
    found
        .into_iter()
        .map(|(s, e, direction)| StatedDirection {
            direction,
            phrase: text[s..e].to_string(),
        })
        .collect()
}

/// The one direction `text` states, if it states exactly one (possibly several times).
fn single_direction(text: &str) -> Option<StatedDirection> {
    let all = stated_directions(text);
    let first = all.first()?.clone();
    all.iter()
        .all(|d| d.direction == first.direction)
        .then_some(first)
}

fn pt(p: ModelPoint) -> String {
    format!("[{}, {}]", fmt_num(p.x), fmt_num(p.y))
}

/// Checks a swipe's start/end against its dominant axis, the direction stated in `reason` and
/// the direction the user named in `task` (SPEC A5).
///
/// # Errors
/// [`ParseErrorKind::SwipeDirection`] with a message naming the inconsistency: equal points,
/// no dominant axis, reason vs. start/end, or task vs. start/end.
pub fn check_swipe(
    start: ModelPoint,
    end: ModelPoint,
    reason: Option<&str>,
    task: Option<&str>,
) -> ParseResult<()> {
    let err =
        |msg: String| Err(ParseError::new(ParseErrorKind::SwipeDirection, msg).with_field("end"));
    let dx = end.x - start.x;
    let dy = end.y - start.y;
    if dx == 0.0 && dy == 0.0 {
        return err(format!(
            "the swipe starts and ends at the same point {}: a swipe must move the finger",
            pt(start)
        ));
    }
    let Some(actual) = SwipeDirection::of(start, end) else {
        return err(format!(
            "the swipe {} → {} moves as far horizontally as vertically ({} and {}): make one axis \
             dominate (left/right: x changes most; up/down: y changes most)",
            pt(start),
            pt(end),
            fmt_num(dx.abs()),
            fmt_num(dy.abs())
        ));
    };
    let motion = format!(
        "start {} → end {} moves the finger {} ({})",
        pt(start),
        pt(end),
        actual,
        actual.rule()
    );
    if let Some(stated) = reason.and_then(single_direction)
        && stated.direction != actual
    {
        return err(format!(
            "the reason says {:?}, which means the finger moves {} ({}), but {motion}. Swipe \
             direction is the finger's motion on the screenshot; make start/end and the reason agree",
            stated.phrase,
            stated.direction,
            stated.direction.rule()
        ));
    }
    if let Some(asked) = task.and_then(single_direction)
        && asked.direction != actual
    {
        return err(format!(
            "the task asks for {:?}, which means the finger moves {} ({}), but {motion}. Keep the \
             user's direction even if another one looks better",
            asked.phrase,
            asked.direction,
            asked.direction.rule()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(x: f64, y: f64) -> ModelPoint {
        ModelPoint { x, y }
    }

    fn dirs(t: &str) -> Vec<SwipeDirection> {
        stated_directions(t)
            .into_iter()
            .map(|d| d.direction)
            .collect()
    }

    #[test]
    fn patterns_compile() {
        for pat in [
            EN_FROM_TO, ZH_FROM_TO, EN_VERB, EN_ADJ, ZH_SCROLL, ZH_VERB, ZH_BARE,
        ] {
            assert!(Regex::new(pat).is_ok(), "{pat}");
        }
        assert_eq!(PATTERNS.len(), 7);
    }

    #[test]
    fn reads_english_finger_and_scroll_words() {
        use SwipeDirection::*;
        assert_eq!(dirs("Swipe left to see the next photo"), vec![Left]);
        assert_eq!(dirs("swipe the screen up"), vec![Up]);
        assert_eq!(dirs("an upward swipe reveals the drawer"), vec![Up]);
        assert_eq!(dirs("scroll down to find Settings"), vec![Up]);
        assert_eq!(dirs("swipe from the bottom to the top"), vec![Up]);
        assert_eq!(dirs("Swipe from right to left"), vec![Left]);
        assert_eq!(dirs("pull down the notification shade"), vec![Down]);
        assert!(dirs("tap the button at the top right").is_empty());
        assert!(dirs("go back up one level").is_empty());
    }

    #[test]
    fn reads_chinese_finger_and_scroll_words() {
        use SwipeDirection::*;
        assert_eq!(dirs("向上滑动查看更多"), vec![Up]);
        assert_eq!(dirs("左滑切换到下一张"), vec![Left]);
        assert_eq!(dirs("下拉刷新"), vec![Down]);
        assert_eq!(dirs("从下往上滑"), vec![Up]);
        assert_eq!(dirs("从左向右滑动"), vec![Right]);
        assert_eq!(dirs("向下滚动列表"), vec![Up]);
        assert_eq!(dirs("往下翻找设置"), vec![Up]);
        assert_eq!(dirs("页面向左"), vec![Left]);
        assert!(dirs("点击下拉菜单").is_empty());
        assert!(dirs("文字有下划线").is_empty());
        assert!(dirs("右上角的按钮在页面上方").is_empty());
    }

    #[test]
    fn consistent_swipes_pass() {
        assert!(
            check_swipe(
                p(500.0, 800.0),
                p(500.0, 200.0),
                Some("向上滑动查看更多"),
                None
            )
            .is_ok()
        );
        assert!(
            check_swipe(
                p(800.0, 500.0),
                p(200.0, 500.0),
                Some("swipe left"),
                Some("向左滑")
            )
            .is_ok()
        );
        assert!(
            check_swipe(
                p(500.0, 800.0),
                p(500.0, 200.0),
                Some("scroll down the list"),
                None
            )
            .is_ok()
        );
        // No stated direction: only the dominant axis matters.
        assert!(
            check_swipe(
                p(500.0, 800.0),
                p(520.0, 200.0),
                Some("look for more"),
                None
            )
            .is_ok()
        );
        // Two different directions in the reason: ambiguous, not used.
        assert!(
            check_swipe(
                p(500.0, 800.0),
                p(500.0, 200.0),
                Some("swiped down before; now swipe up"),
                None
            )
            .is_ok()
        );
    }

    #[test]
    fn inconsistencies_are_named() {
        let e = check_swipe(
            p(500.0, 800.0),
            p(500.0, 200.0),
            Some("左滑进入下一页"),
            None,
        )
        .unwrap_err();
        assert_eq!(e.kind, ParseErrorKind::SwipeDirection);
        assert!(
            e.message.contains("左滑") && e.message.contains("finger up"),
            "{}",
            e.message
        );
        let e = check_swipe(
            p(800.0, 500.0),
            p(200.0, 500.0),
            Some("swipe left"),
            Some("向右滑动浏览图片"),
        )
        .unwrap_err();
        assert!(
            e.message.contains("task") && e.message.contains("向右滑"),
            "{}",
            e.message
        );
        let e = check_swipe(p(500.0, 500.0), p(500.0, 500.0), None, None).unwrap_err();
        assert!(e.message.contains("same point"));
        let e = check_swipe(p(100.0, 100.0), p(300.0, 300.0), None, None).unwrap_err();
        assert!(e.message.contains("dominate"));
    }

    #[test]
    fn direction_of_points() {
        assert_eq!(
            SwipeDirection::of(p(0.0, 0.0), p(10.0, 3.0)),
            Some(SwipeDirection::Right)
        );
        assert_eq!(
            SwipeDirection::of(p(0.0, 10.0), p(3.0, 0.0)),
            Some(SwipeDirection::Up)
        );
        assert_eq!(SwipeDirection::of(p(0.0, 0.0), p(0.0, 0.0)), None);
    }
}
