//! Screenshot preparation time per step (SPEC M6): downscale + encode of a 1080×2400 frame
//! under several sizing policies. Prints a table; run with
//! `cargo bench -p phoneagent-llm --bench encode`.

// A bench binary: a failed prepare should abort loudly.
#![allow(clippy::expect_used)]

use std::time::{Duration, Instant};

use image::{Rgba, RgbaImage};
use phoneagent_llm::{ImageFormat, ImagePolicy, prepare_image};

/// A phone-like frame: status bar, list rows with text-like stripes, an image block, noise.
fn frame(w: u32, h: u32) -> RgbaImage {
    let mut seed: u32 = 0x1234_5678;
    RgbaImage::from_fn(w, h, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let noise = (seed & 7) as u8;
        if y < 80 {
            return Rgba([30, 30, 30, 255]);
        }
        let row = (y - 80) / 180;
        let in_row = (y - 80) % 180;
        if (600..1100).contains(&y) && (100..980).contains(&x) {
            // A "photo".
            return Rgba([(x / 4) as u8 ^ noise, (y / 5) as u8, (x ^ y) as u8, 255]);
        }
        if (40..70).contains(&in_row)
            && x > 200
            && x < 200 + 60 * (row % 9 + 4)
            && (x / 14) % 3 != 0
        {
            return Rgba([40 + noise, 40 + noise, 40 + noise, 255]);
        }
        if in_row == 179 {
            return Rgba([220, 220, 220, 255]);
        }
        Rgba([250 - noise, 250 - noise, 250 - noise, 255])
    })
}

fn bench(name: &str, img: &RgbaImage, policy: &ImagePolicy) {
    // Warm up.
    let first = prepare_image(img, policy).expect("prepare");
    let iters = 15;
    let mut times: Vec<Duration> = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        let out = prepare_image(img, policy).expect("prepare");
        times.push(t.elapsed());
        std::hint::black_box(out);
    }
    times.sort();
    let median = times[iters / 2];
    let min = times[0];
    println!(
        "| {name:<34} | {:>9} | {:>8.1} | {:>8.1} | {:>9.1} |",
        format!("{}x{}", first.sent.0, first.sent.1),
        median.as_secs_f64() * 1e3,
        min.as_secs_f64() * 1e3,
        first.bytes.len() as f64 / 1024.0
    );
}

fn main() {
    let img = frame(1080, 2400);
    println!(
        "prepare_image on a 1080x2400 RGBA frame (downscale Lanczos3 + encode), {} iterations",
        15
    );
    println!(
        "| policy                             | sent      | median ms | min ms  | size KiB  |"
    );
    println!(
        "|------------------------------------|-----------|-----------|---------|-----------|"
    );
    bench(
        "default (1568 / 1.0 MP, JPEG q85)",
        &img,
        &ImagePolicy::default(),
    );
    bench(
        "default, PNG",
        &img,
        &ImagePolicy {
            format: ImageFormat::Png,
            ..Default::default()
        },
    );
    bench(
        "1000 px, multiple of 28, JPEG q85",
        &img,
        &ImagePolicy {
            max_long_side: 1000,
            multiple_of: Some(28),
            ..Default::default()
        },
    );
    bench(
        "full size (no downscale), JPEG q85",
        &img,
        &ImagePolicy {
            max_long_side: 4096,
            max_pixels: u64::MAX,
            ..Default::default()
        },
    );
    bench(
        "full size, PNG",
        &img,
        &ImagePolicy {
            max_long_side: 4096,
            max_pixels: u64::MAX,
            format: ImageFormat::Png,
            ..Default::default()
        },
    );
}
