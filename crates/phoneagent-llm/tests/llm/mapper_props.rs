//! Property tests of the coordinate mapper (SPEC M5): round trips, monotonicity, bounds and
//! rejection without clamping, on tall, landscape and odd-sized screens.

use phoneagent_llm::mapper::{CoordinateMapper, device_to_runtime, runtime_to_device};
use phoneagent_llm::{CanonicalPoint, ImagePolicy};
use phoneagent_protocol::{CoordinateSpace, ErrorCode, ModelPoint, Rotation, ScreenGeometry};
use proptest::prelude::*;

/// (display w, h, rotation): tall phones, landscape, and sizes that are not multiples of 28.
const SCREENS: &[(u32, u32, Rotation)] = &[
    (1080, 2400, Rotation::R0),
    (1216, 2688, Rotation::R0),
    (2400, 1080, Rotation::R90),
    (2688, 1216, Rotation::R270),
    (1081, 2399, Rotation::R0),
    (719, 1613, Rotation::R180),
];

const SPACES: &[CoordinateSpace] = &[
    CoordinateSpace::Relative0999,
    CoordinateSpace::ImagePixels,
    CoordinateSpace::DisplayPixels,
];

fn policies() -> Vec<ImagePolicy> {
    vec![
        ImagePolicy::default(),
        ImagePolicy {
            max_long_side: 1000,
            multiple_of: Some(28),
            ..Default::default()
        },
        ImagePolicy {
            max_long_side: 4096,
            max_pixels: u64::MAX,
            ..Default::default()
        },
    ]
}

fn setup(screen: usize, space: usize, policy: usize) -> (CoordinateMapper, ScreenGeometry) {
    let (w, h, rotation) = SCREENS[screen];
    let g = ScreenGeometry {
        width_px: w,
        height_px: h,
        density_dpi: None,
        rotation,
    };
    let sent = policies()[policy].target_size(w, h);
    (
        CoordinateMapper::new(SPACES[space], (w, h), sent, g).unwrap(),
        g,
    )
}

fn max_of(m: &CoordinateMapper, g: &ScreenGeometry) -> (f64, f64) {
    let p = m.from_canonical(CanonicalPoint { x: 1.0, y: 1.0 });
    let _ = g;
    (p.x, p.y)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any in-range model point lands inside the display and the runtime grid.
    #[test]
    fn in_range_points_stay_in_bounds(screen in 0..SCREENS.len(), space in 0..SPACES.len(),
                                      policy in 0..3usize, fx in 0.0..=1.0f64, fy in 0.0..=1.0f64) {
        let (m, g) = setup(screen, space, policy);
        let (mx, my) = max_of(&m, &g);
        let p = ModelPoint { x: fx * mx, y: fy * my };
        let mapped = m.map(p, &g).unwrap();
        prop_assert!(mapped.runtime.x <= 999 && mapped.runtime.y <= 999);
        prop_assert!(mapped.device.x < g.width_px && mapped.device.y < g.height_px);
        prop_assert!((0.0..=1.0).contains(&mapped.canonical.x));
        prop_assert!((0.0..=1.0).contains(&mapped.canonical.y));
        prop_assert_eq!(mapped.model, p);
        prop_assert_eq!(mapped.space, SPACES[space]);
    }

    /// Device px → canonical → model → mapped device px comes back within the runtime grid's
    /// quantisation (half a grid cell plus rounding).
    #[test]
    fn device_round_trip(screen in 0..SCREENS.len(), space in 0..SPACES.len(), policy in 0..3usize,
                         dx in 0.0..=1.0f64, dy in 0.0..=1.0f64) {
        let (m, g) = setup(screen, space, policy);
        let x = (dx * f64::from(g.width_px - 1)).round() as u32;
        let y = (dy * f64::from(g.height_px - 1)).round() as u32;
        let c = CanonicalPoint {
            x: f64::from(x) / f64::from(g.width_px - 1),
            y: f64::from(y) / f64::from(g.height_px - 1),
        };
        let mapped = m.map(m.from_canonical(c), &g).unwrap();
        let tol_x = f64::from(g.width_px - 1) / 999.0 / 2.0 + 1.0;
        let tol_y = f64::from(g.height_px - 1) / 999.0 / 2.0 + 1.0;
        prop_assert!((f64::from(mapped.device.x) - f64::from(x)).abs() <= tol_x,
            "x {} -> {} (tol {})", x, mapped.device.x, tol_x);
        prop_assert!((f64::from(mapped.device.y) - f64::from(y)).abs() <= tol_y,
            "y {} -> {} (tol {})", y, mapped.device.y, tol_y);
        // Canonical survives the model-space round trip exactly (up to float error).
        prop_assert!((mapped.canonical.x - c.x).abs() < 1e-9);
        prop_assert!((mapped.canonical.y - c.y).abs() < 1e-9);
    }

    /// Larger model coordinates never map to smaller device coordinates.
    #[test]
    fn monotonic(screen in 0..SCREENS.len(), space in 0..SPACES.len(), policy in 0..3usize,
                 a in 0.0..=1.0f64, b in 0.0..=1.0f64) {
        let (m, g) = setup(screen, space, policy);
        let (mx, my) = max_of(&m, &g);
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let p1 = m.map(ModelPoint { x: lo * mx, y: lo * my }, &g).unwrap();
        let p2 = m.map(ModelPoint { x: hi * mx, y: hi * my }, &g).unwrap();
        prop_assert!(p1.device.x <= p2.device.x && p1.device.y <= p2.device.y);
        prop_assert!(p1.runtime.x <= p2.runtime.x && p1.runtime.y <= p2.runtime.y);
    }

    /// Out of range on either axis is an error with code coordinate_out_of_range — never a
    /// clamped point.
    #[test]
    fn out_of_range_rejected(screen in 0..SCREENS.len(), space in 0..SPACES.len(), policy in 0..3usize,
                             over in 1e-6..5000.0f64, axis in 0..4usize, fy in 0.0..=1.0f64) {
        let (m, g) = setup(screen, space, policy);
        let (mx, my) = max_of(&m, &g);
        let inside = fy * mx.min(my);
        let p = match axis {
            0 => ModelPoint { x: mx + over, y: inside },
            1 => ModelPoint { x: inside, y: my + over },
            2 => ModelPoint { x: -over, y: inside },
            _ => ModelPoint { x: inside, y: -over },
        };
        let err = m.map(p, &g).unwrap_err();
        prop_assert_eq!(err.code(), ErrorCode::CoordinateOutOfRange);
    }

    /// runtime → device → runtime is the identity on the 0..=999 grid for screens ≥ 1000 px.
    #[test]
    fn runtime_device_inverse(screen in 0..SCREENS.len(), rx in 0u16..=999, ry in 0u16..=999) {
        let (w, h, rotation) = SCREENS[screen];
        let g = ScreenGeometry { width_px: w, height_px: h, density_dpi: None, rotation };
        let rp = phoneagent_protocol::RuntimePoint { x: rx, y: ry };
        let back = device_to_runtime(runtime_to_device(rp, &g), &g);
        if w >= 1000 { prop_assert_eq!(back.x, rx); }
        if h >= 1000 { prop_assert_eq!(back.y, ry); }
    }
}

#[test]
fn image_pixels_on_odd_sizes_map_corners_exactly() {
    for &(w, h, rotation) in SCREENS {
        let g = ScreenGeometry {
            width_px: w,
            height_px: h,
            density_dpi: None,
            rotation,
        };
        for policy in policies() {
            let sent = policy.target_size(w, h);
            let m = CoordinateMapper::new(CoordinateSpace::ImagePixels, (w, h), sent, g).unwrap();
            let last = ModelPoint {
                x: f64::from(sent.0 - 1),
                y: f64::from(sent.1 - 1),
            };
            let p = m.map(last, &g).unwrap();
            assert_eq!(
                (p.device.x, p.device.y),
                (w - 1, h - 1),
                "{w}x{h} sent {sent:?}"
            );
            let p = m.map(ModelPoint { x: 0.0, y: 0.0 }, &g).unwrap();
            assert_eq!((p.device.x, p.device.y), (0, 0));
            assert_eq!(p.sent_size, sent);
            assert_eq!(p.display_size, (w, h));
        }
    }
}
