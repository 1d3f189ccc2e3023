//! Rendering: deterministic, cached, CJK glyphs actually drawn.

use sha2::{Digest, Sha256};

use crate::common::*;

#[tokio::test]
async fn rendering_is_deterministic_and_cjk_glyphs_draw() {
    let (sim, phone) = start().await;
    let p = sim.port();
    let a = phone.screenshot_png().unwrap();
    // Change the state and come back: a fresh render must give the same bytes.
    tap(p, &phone, "home.app.shop").await;
    let shop = phone.screenshot_png().unwrap();
    sh(p, "input keyevent 3").await;
    let b = phone.screenshot_png().unwrap();
    assert_ne!(Sha256::digest(&a), Sha256::digest(&shop));
    assert_eq!(Sha256::digest(&a), Sha256::digest(&b));
    // A second server renders the same home screen too.
    let (_sim2, phone2) = start().await;
    assert_eq!(
        Sha256::digest(&a),
        Sha256::digest(phone2.screenshot_png().unwrap())
    );

    // The label 商城 under the shop icon has non-background pixels (the glyphs).
    let img = decode_png(&a);
    let gt = phone.ground_truth();
    let el = gt.element("home.app.shop").unwrap();
    let [x0, _, x1, y1] = el.bounds;
    let bg = img.get_pixel(5, 2000).0; // wallpaper
    let label_rows = (y1 - 70) as u32..y1 as u32;
    let mut inked = 0;
    for y in label_rows {
        for x in x0 as u32..x1 as u32 {
            if img.get_pixel(x, y).0 != bg {
                inked += 1;
            }
        }
    }
    assert!(inked > 200, "label pixels drawn: {inked}");
}

#[tokio::test]
async fn every_scenario_renders_in_both_orientations() {
    let (_sim, phone) = start().await;
    for scenario in phoneagent_sim::SCENARIOS {
        for rotation in [0u8, 1] {
            phone.reset(scenario).unwrap();
            phone.set_faults(phoneagent_sim::Faults {
                rotation,
                dialog_disabled: true,
                ..Default::default()
            });
            // Render only (PNG is covered elsewhere; keeps this test fast).
            let dims = phone.render_uncached().unwrap();
            let want = if rotation == 1 {
                (2400, 1080)
            } else {
                (1080, 2400)
            };
            assert_eq!(dims, want, "{scenario}");
            let gt = phone.ground_truth();
            assert!(!gt.elements.is_empty(), "{scenario}: something is tappable");
            for e in &gt.elements {
                let [x0, y0, x1, y1] = e.bounds;
                assert!(
                    x0 < x1 && y0 < y1 && x1 <= want.0 as i32 && y1 <= want.1 as i32,
                    "{scenario}: {e:?}"
                );
                assert!(!e.label.is_empty(), "{scenario}: {e:?}");
            }
        }
    }
}

#[test]
fn missing_font_is_a_clear_error() {
    // Only checks the message: the font is process-wide, so this cannot unset it.
    let e = phoneagent_sim::SimError::FontNotFound {
        searched: "/x".to_owned(),
    };
    let msg = e.to_string();
    assert!(msg.contains("fonts-wqy-microhei"), "{msg}");
    assert!(msg.contains("PHONEAGENT_SIM_FONT"), "{msg}");
}
