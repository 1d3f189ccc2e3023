//! Label-based targeting: `{{center:LABEL}}`, `{{x:LABEL}}`, `{{y:LABEL}}` placeholders resolved
//! against the virtual phone's ground truth at answer time.
//!
//! * `LABEL` is matched against the visible elements' `label` exactly (surrounding whitespace
//!   trimmed), then against their `id`. When several elements match, append `#N` (1-based, in
//!   ground-truth order) — e.g. `{{center:加入购物车#2}}`; without it the placeholder is an error.
//! * `center` → `[x,y]` (in text) or a JSON array (when a tool-call argument string is exactly the
//!   placeholder); `x` / `y` → one integer.
//! * The element's centre `((x0+x1)/2, (y0+y1)/2)` in device px is converted to the space in
//!   force: `relative_0_999` = `round(1000 · c / screen size)` clamped to 0..=999;
//!   `image_pixels` = `round(c · image size / screen size)` with the size of the last image the
//!   request actually carried (read from its data URL).
//! * `{{center@CONV:LABEL}}`, `{{x@CONV:LABEL}}`, `{{y@CONV:LABEL}}` answer in a model family's
//!   convention whatever the space in force (SPEC M7): `rel999` (`0..=999`), `rel1000`
//!   (`0..=1000`), `sr` (Qwen2.5-VL smart-resize px of the request's image: factor 28,
//!   `min_pixels` 3 136, `max_pixels` 12 845 056) and `sr_tars` (UI-TARS-1.5: `min_pixels`
//!   78 400), from the centre's canonical position `c / (size − 1)`. E.g. UI-TARS:
//!   `click(point='<point>{{x@sr_tars:提交订单}} {{y@sr_tars:提交订单}}</point>')`.
//! * An element that cannot be found is an error naming the label, the screen and the labels
//!   that are visible; the server answers HTTP 500 with that message (code
//!   `placeholder_unresolved`), so a test fails loudly instead of tapping nowhere.

use phoneagent_protocol::CoordinateSpace;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Error, Result};

/// One visible element of the phone's ground truth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Element {
    /// Stable element id.
    pub id: String,
    /// Visible label text.
    pub label: String,
    /// `[x0, y0, x1, y1]` in device px of the current orientation.
    pub bounds: [f64; 4],
}

/// The part of the ground truth placeholders need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScreenTruth {
    /// Current screen name, for error messages.
    pub screen: String,
    /// Screen width in px of the current orientation (`None` if the ground truth lacks it).
    pub width: Option<u32>,
    /// Screen height in px of the current orientation.
    pub height: Option<u32>,
    /// Visible elements.
    pub elements: Vec<Element>,
}

impl ScreenTruth {
    /// Read the fields out of a ground-truth JSON value (as `phoneagent_sim` serializes it).
    /// Lenient about where the screen size lives (`width`/`height`, `screen_width`/
    /// `screen_height`, `screen: {width, height}`, `size: [w, h]`).
    ///
    /// Errors: [`Error::GroundTruth`] when `elements` is missing or malformed.
    pub fn from_ground_truth(v: &Value, port: u16) -> Result<Self> {
        let elements = v
            .get("elements")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::GroundTruth {
                port,
                message: "the ground truth has no `elements` list".into(),
            })?
            .iter()
            .map(|e| {
                let bounds = e
                    .get("bounds")
                    .and_then(Value::as_array)
                    .filter(|b| b.len() == 4)
                    .and_then(|b| {
                        let n: Vec<f64> = b.iter().filter_map(Value::as_f64).collect();
                        (n.len() == 4).then(|| [n[0], n[1], n[2], n[3]])
                    })
                    .ok_or_else(|| Error::GroundTruth {
                        port,
                        message: format!("element {e} has no [x0,y0,x1,y1] bounds"),
                    })?;
                Ok(Element {
                    id: value_string(e.get("id")),
                    label: value_string(e.get("label")),
                    bounds,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let num = |p: &str| v.pointer(p).and_then(Value::as_u64).map(|n| n as u32);
        let width = num("/width")
            .or_else(|| num("/screen_width"))
            .or_else(|| num("/screen/width"))
            .or_else(|| num("/size/0"))
            .or_else(|| num("/display/width"));
        let height = num("/height")
            .or_else(|| num("/screen_height"))
            .or_else(|| num("/screen/height"))
            .or_else(|| num("/size/1"))
            .or_else(|| num("/display/height"));
        Ok(Self {
            screen: v
                .get("current_screen")
                .map(|s| value_string(Some(s)))
                .unwrap_or_default(),
            width,
            height,
            elements,
        })
    }

    /// Find the element a placeholder label names (see the module docs).
    pub fn find(&self, spec: &str) -> Result<&Element> {
        let spec = spec.trim();
        let (label, index) = match spec.rsplit_once('#') {
            Some((l, n)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
                (l.trim(), n.parse::<usize>().ok())
            }
            _ => (spec, None),
        };
        let mut hits: Vec<&Element> = self.elements.iter().filter(|e| e.label == label).collect();
        if hits.is_empty() {
            hits = self.elements.iter().filter(|e| e.id == label).collect();
        }
        let visible = || {
            self.elements
                .iter()
                .map(|e| format!("{:?}", e.label))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match (hits.len(), index) {
            (0, _) => Err(Error::Placeholder {
                placeholder: spec.to_string(),
                message: format!(
                    "no visible element labelled (or with id) {label:?} on screen {:?}; visible labels: [{}]",
                    self.screen,
                    visible()
                ),
            }),
            (1, None) => Ok(hits[0]),
            (n, None) => Err(Error::Placeholder {
                placeholder: spec.to_string(),
                message: format!(
                    "{n} visible elements are labelled {label:?} on screen {:?}; write {label}#1 … {label}#{n} to pick one",
                    self.screen
                ),
            }),
            (n, Some(i)) => {
                hits.get(i.wrapping_sub(1))
                    .copied()
                    .ok_or_else(|| Error::Placeholder {
                        placeholder: spec.to_string(),
                        message: format!(
                            "#{i} asked, but only {n} elements are labelled {label:?}"
                        ),
                    })
            }
        }
    }
}

fn value_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// What a placeholder needs to be resolved.
#[derive(Debug, Clone)]
pub struct ResolveContext<'a> {
    /// Ground truth of the current screen; `None` when no virtual phone is configured.
    pub truth: Option<&'a ScreenTruth>,
    /// Answer space (`relative_0_999` or `image_pixels`).
    pub space: CoordinateSpace,
    /// Size of the last image in the request (px), if any.
    pub image_size: Option<(u32, u32)>,
}

/// Whether `text` contains any `{{…}}` placeholder this module resolves.
pub fn has_placeholders(text: &str) -> bool {
    ["{{center:", "{{x:", "{{y:", "{{center@", "{{x@", "{{y@"]
        .iter()
        .any(|p| text.contains(p))
}

impl ResolveContext<'_> {
    fn point(&self, spec: &str) -> Result<(i64, i64)> {
        let truth = self.truth.ok_or_else(|| Error::Placeholder {
            placeholder: spec.to_string(),
            message: "no virtual phone is configured to resolve labels: start the server with a sim port (--sim-port / --oracle-sim-port, or ScriptedModelConfig::sim)".into(),
        })?;
        let el = truth.find(spec)?;
        let cx = (el.bounds[0] + el.bounds[2]) / 2.0;
        let cy = (el.bounds[1] + el.bounds[3]) / 2.0;
        let (sw, sh) = match (truth.width, truth.height, self.image_size) {
            (Some(w), Some(h), _) => (w, h),
            (_, _, Some((w, h))) => (w, h),
            _ => {
                return Err(Error::Placeholder {
                    placeholder: spec.to_string(),
                    message: "the ground truth has no screen size and the request carries no image"
                        .into(),
                });
            }
        };
        match self.space {
            CoordinateSpace::Relative0999 => Ok((rel(cx, sw), rel(cy, sh))),
            CoordinateSpace::ImagePixels => {
                let (iw, ih) = self.image_size.ok_or_else(|| Error::Placeholder {
                    placeholder: spec.to_string(),
                    message: "space image_pixels needs the image the request carried, but the request has no image".into(),
                })?;
                Ok((
                    (cx * f64::from(iw) / f64::from(sw.max(1))).round() as i64,
                    (cy * f64::from(ih) / f64::from(sh.max(1))).round() as i64,
                ))
            }
            other => Err(Error::Config(format!(
                "coordinate space {other} is not one the scripted model answers in: use relative_0_999 or image_pixels"
            ))),
        }
    }

    /// Substitute every placeholder in `text`.
    pub fn resolve_text(&self, text: &str) -> Result<String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find("}}") else {
                out.push_str(&rest[start..]);
                return Ok(out);
            };
            let inner = &after[..end];
            match self.resolve_one(inner)? {
                Some(v) => out.push_str(&render(&v)),
                None => {
                    out.push_str("{{");
                    out.push_str(inner);
                    out.push_str("}}");
                }
            }
            rest = &after[end + 2..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// A label's centre in a model family's convention (SPEC M7): `rel999`, `rel1000`,
    /// `sr` (Qwen2.5-VL smart-resize px of the image the request carried) or `sr_tars`
    /// (UI-TARS-1.5's smart-resize parameters).
    fn family_point(&self, conv: &str, spec: &str) -> Result<(i64, i64)> {
        use phoneagent_protocol::family::{FamilyCoords, SmartResize};
        let coords = match conv {
            "rel999" => FamilyCoords::Relative999,
            "rel1000" => FamilyCoords::Relative1000,
            "sr" => FamilyCoords::SmartResize(SmartResize::QWEN25_VL),
            "sr_tars" => FamilyCoords::SmartResize(SmartResize::UI_TARS_15),
            other => {
                return Err(Error::Placeholder {
                    placeholder: spec.to_string(),
                    message: format!(
                        "unknown convention @{other}: use @rel999, @rel1000, @sr or @sr_tars"
                    ),
                });
            }
        };
        let truth = self.truth.ok_or_else(|| Error::Placeholder {
            placeholder: spec.to_string(),
            message: "no virtual phone is configured to resolve labels".into(),
        })?;
        let el = truth.find(spec)?;
        let (sw, sh) = match (truth.width, truth.height, self.image_size) {
            (Some(w), Some(h), _) | (_, _, Some((w, h))) => (w, h),
            _ => {
                return Err(Error::Placeholder {
                    placeholder: spec.to_string(),
                    message: "the ground truth has no screen size and the request carries no image"
                        .into(),
                });
            }
        };
        let image = self.image_size.unwrap_or((sw, sh));
        let u = ((el.bounds[0] + el.bounds[2]) / 2.0) / f64::from(sw.saturating_sub(1).max(1));
        let v = ((el.bounds[1] + el.bounds[3]) / 2.0) / f64::from(sh.saturating_sub(1).max(1));
        coords
            .from_canonical(u, v, image)
            .map_err(|message| Error::Placeholder {
                placeholder: spec.to_string(),
                message,
            })
    }

    /// Resolve one placeholder body (`center:LABEL`, or `center@CONV:LABEL` in a model
    /// family's convention); `None` when it is not one of ours.
    fn resolve_one(&self, inner: &str) -> Result<Option<Value>> {
        let Some((kind, spec)) = inner.split_once(':') else {
            return Ok(None);
        };
        if let Some((base, conv)) = kind.trim().split_once('@') {
            let (x, y) = self.family_point(conv.trim(), spec)?;
            return Ok(match base {
                "center" => Some(Value::from(vec![x, y])),
                "x" => Some(Value::from(x)),
                "y" => Some(Value::from(y)),
                _ => None,
            });
        }
        match kind.trim() {
            "center" => {
                let (x, y) = self.point(spec)?;
                Ok(Some(Value::from(vec![x, y])))
            }
            "x" => Ok(Some(Value::from(self.point(spec)?.0))),
            "y" => Ok(Some(Value::from(self.point(spec)?.1))),
            _ => Ok(None),
        }
    }

    /// Resolve placeholders inside tool-call arguments: string values that are exactly one
    /// placeholder become its JSON value; other strings get textual substitution.
    pub fn resolve_value(&self, v: &Value) -> Result<Value> {
        Ok(match v {
            Value::String(s) => {
                let t = s.trim();
                if let Some(inner) = t.strip_prefix("{{").and_then(|r| r.strip_suffix("}}"))
                    && !inner.contains("{{")
                    && let Some(resolved) = self.resolve_one(inner)?
                {
                    resolved
                } else {
                    Value::String(self.resolve_text(s)?)
                }
            }
            Value::Array(a) => Value::Array(
                a.iter()
                    .map(|x| self.resolve_value(x))
                    .collect::<Result<_>>()?,
            ),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| Ok((k.clone(), self.resolve_value(x)?)))
                    .collect::<Result<_>>()?,
            ),
            other => other.clone(),
        })
    }
}

fn render(v: &Value) -> String {
    match v {
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(Value::to_string).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

fn rel(c: f64, size: u32) -> i64 {
    ((1000.0 * c / f64::from(size.max(1))).round() as i64).clamp(0, 999)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn truth() -> ScreenTruth {
        ScreenTruth::from_ground_truth(
            &json!({
                "current_screen": "checkout",
                "width": 1080, "height": 2400,
                "elements": [
                    {"id": "submit", "label": "提交订单", "kind": "button", "bounds": [700, 2200, 1060, 2380]},
                    {"id": "add1", "label": "加入购物车", "kind": "button", "bounds": [0, 0, 100, 100]},
                    {"id": "add2", "label": "加入购物车", "kind": "button", "bounds": [100, 100, 300, 300]}
                ]
            }),
            1,
        )
        .unwrap()
    }

    #[test]
    fn resolves_family_conventions() {
        let t = truth();
        let ctx = ResolveContext {
            truth: Some(&t),
            space: CoordinateSpace::Relative0999,
            image_size: Some((1080, 2400)),
        };
        // 提交订单 centre (880, 2290) of 1080x2400; smart_resize(2400, 1080) = (2408, 1092).
        assert_eq!(
            ctx.resolve_text("{{center@rel999:提交订单}}").unwrap(),
            "[815,954]"
        );
        assert_eq!(
            ctx.resolve_text("{{center@rel1000:提交订单}}").unwrap(),
            "[816,955]"
        );
        assert_eq!(
            ctx.resolve_text("<point>{{x@sr:提交订单}} {{y@sr:提交订单}}</point>")
                .unwrap(),
            "<point>890 2298</point>"
        );
        assert!(ctx.resolve_text("{{center@nope:提交订单}}").is_err());
        assert!(has_placeholders("{{x@sr:a}}"));
    }

    #[test]
    fn resolves_text_in_both_spaces() {
        let t = truth();
        let rel = ResolveContext {
            truth: Some(&t),
            space: CoordinateSpace::Relative0999,
            image_size: None,
        };
        assert_eq!(
            rel.resolve_text(r#"do(action="Tap", element={{center:提交订单}})"#)
                .unwrap(),
            r#"do(action="Tap", element=[815,954])"#
        );
        let px = ResolveContext {
            truth: Some(&t),
            space: CoordinateSpace::ImagePixels,
            image_size: Some((540, 1200)),
        };
        assert_eq!(
            px.resolve_text("{{x:submit}},{{y: 提交订单 }}").unwrap(),
            "440,1145"
        );
        assert_eq!(
            px.resolve_text("{{center:加入购物车#2}}").unwrap(),
            "[100,100]"
        );
        assert_eq!(
            px.resolve_text("keep {{other}} and {{ unclosed").unwrap(),
            "keep {{other}} and {{ unclosed"
        );
    }

    #[test]
    fn resolves_tool_arguments_to_json_values() {
        let t = truth();
        let ctx = ResolveContext {
            truth: Some(&t),
            space: CoordinateSpace::Relative0999,
            image_size: None,
        };
        let v = ctx
            .resolve_value(&json!({"element": "{{center:提交订单}}", "reason": "tap {{x:submit}}"}))
            .unwrap();
        assert_eq!(v, json!({"element": [815, 954], "reason": "tap 815"}));
    }

    #[test]
    fn errors_name_the_problem() {
        let t = truth();
        let ctx = ResolveContext {
            truth: Some(&t),
            space: CoordinateSpace::Relative0999,
            image_size: None,
        };
        let e = ctx
            .resolve_text("{{center:确认支付}}")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("确认支付") && e.contains("checkout") && e.contains("提交订单"),
            "{e}"
        );
        let e = ctx
            .resolve_text("{{center:加入购物车}}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("#1") && e.contains("2 visible"), "{e}");
        let e = ctx
            .resolve_text("{{center:加入购物车#3}}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("#3"), "{e}");
        let px = ResolveContext {
            truth: Some(&t),
            space: CoordinateSpace::ImagePixels,
            image_size: None,
        };
        assert!(
            px.resolve_text("{{center:submit}}")
                .unwrap_err()
                .to_string()
                .contains("no image")
        );
        let none = ResolveContext {
            truth: None,
            space: CoordinateSpace::Relative0999,
            image_size: None,
        };
        assert!(
            none.resolve_text("{{center:x}}")
                .unwrap_err()
                .to_string()
                .contains("no virtual phone")
        );
    }
}
