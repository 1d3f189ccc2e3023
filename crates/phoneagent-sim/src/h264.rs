//! H.264 encoding of the phone's rendered frames (SPEC V7), with the OpenH264 encoder (the
//! `openh264` crate builds Cisco's C source): what the virtual phone's `screenrecord
//! --output-format=h264` and scrcpy server stream, Annex B, split the way Android's MediaCodec
//! hands them out — a *config* packet (SPS + PPS) before every key frame, then the frame.

use openh264::OpenH264API;
use openh264::encoder::{
    BitRate, Complexity, Encoder, EncoderConfig, FrameRate, FrameType, IntraFramePeriod, QpRange,
    RateControlMode, UsageType,
};
use openh264::formats::{RgbaSliceU8, YUVBuffer};

/// One encoded access unit, split like MediaCodec output.
#[derive(Debug, Clone, Default)]
pub(crate) struct Encoded {
    /// SPS + PPS (Annex B), present before a key frame.
    pub config: Option<Vec<u8>>,
    /// The frame's slice NAL units (Annex B); empty when the encoder skipped the frame.
    pub frame: Vec<u8>,
    /// True for an IDR frame.
    pub key: bool,
}

/// An encoder of RGBA frames; re-initialises (new SPS/PPS, key frame) when the size changes.
pub(crate) struct H264Encoder {
    enc: Encoder,
    yuv: Option<YUVBuffer>,
}

impl H264Encoder {
    /// A real-time encoder at up to `max_fps`, `bit_rate` bits per second.
    ///
    /// Tuned for speed, as a phone's hardware encoder is: OpenH264's screen-content mode
    /// (hash motion search, scroll detection) took 46 ms per full-screen change of a 1080×2400
    /// frame on one core, which capped the stream at ~22 fps; the camera real-time mode at low
    /// complexity without scene-change / background detection and adaptive quantisation, on two
    /// slice threads, takes about half that. The quality range (QP 10–32) is unchanged, so text
    /// stays as sharp for the gate's screen reading.
    pub(crate) fn new(max_fps: f32, bit_rate: u32) -> Result<Self, String> {
        let cfg = EncoderConfig::new()
            .usage_type(UsageType::CameraVideoRealTime)
            .complexity(Complexity::Low)
            .scene_change_detect(false)
            .background_detection(false)
            .adaptive_quantization(false)
            .num_threads(2)
            .max_frame_rate(FrameRate::from_hz(max_fps.max(1.0)))
            .bitrate(BitRate::from_bps(bit_rate.max(100_000)))
            .rate_control_mode(RateControlMode::Quality)
            .skip_frames(false)
            .qp(QpRange::new(10, 32))
            .intra_frame_period(IntraFramePeriod::from_num_frames(0));
        let enc = Encoder::with_api_config(OpenH264API::from_source(), cfg)
            .map_err(|e| format!("H.264 encoder: {e}"))?;
        Ok(Self { enc, yuv: None })
    }

    /// Encode one RGBA frame of `w`×`h` px (`w`, `h` even); `key` forces an IDR frame.
    pub(crate) fn encode(
        &mut self,
        rgba: &[u8],
        w: u32,
        h: u32,
        key: bool,
    ) -> Result<Encoded, String> {
        let dims = (w as usize, h as usize);
        let src = RgbaSliceU8::new(rgba, dims);
        match &mut self.yuv {
            // The RGBA8 paths are the vectorised ones (10 ms vs 90 ms per 1080x2400 frame).
            Some(y) if openh264::formats::YUVSource::dimensions(y) == dims => y.read_rgba8(src),
            slot => *slot = Some(YUVBuffer::from_rgba8_source(src)),
        }
        let Some(yuv) = self.yuv.as_ref() else {
            return Err("H.264 encoder: no frame buffer".to_owned());
        };
        if key {
            self.enc.force_intra_frame();
        }
        let bs = self
            .enc
            .encode(yuv)
            .map_err(|e| format!("H.264 encoder: {e}"))?;
        let is_key = matches!(bs.frame_type(), FrameType::IDR);
        let all = bs.to_vec();
        let mut out = Encoded {
            key: is_key,
            ..Encoded::default()
        };
        for nal in openh264::nal_units(&all) {
            let t = nal_type(nal);
            if t == 7 || t == 8 {
                out.config
                    .get_or_insert_with(Vec::new)
                    .extend_from_slice(nal);
            } else {
                out.frame.extend_from_slice(nal);
            }
        }
        Ok(out)
    }
}

/// The type of an Annex B NAL unit (the 5 low bits after the start code); 0 when malformed.
pub(crate) fn nal_type(nal: &[u8]) -> u8 {
    let body = if nal.starts_with(&[0, 0, 0, 1]) {
        &nal[4..]
    } else if nal.starts_with(&[0, 0, 1]) {
        &nal[3..]
    } else {
        nal
    };
    body.first().map_or(0, |b| b & 0x1f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_key_then_delta_frames_and_resizes() {
        let mut e = H264Encoder::new(30.0, 4_000_000).unwrap();
        let a = [200u8, 100, 50, 255].repeat(64 * 48);
        let first = e.encode(&a, 64, 48, false).unwrap();
        assert!(first.key, "the first frame is a key frame");
        assert!(first.config.is_some(), "SPS/PPS come before it");
        assert!(!first.frame.is_empty());
        let second = e.encode(&a, 64, 48, false).unwrap();
        assert!(!second.key);
        assert!(second.config.is_none());
        let forced = e.encode(&a, 64, 48, true).unwrap();
        assert!(forced.key);
        let b = [10u8, 20, 30, 255].repeat(48 * 64);
        let rotated = e.encode(&b, 48, 64, false).unwrap();
        assert!(
            rotated.key && rotated.config.is_some(),
            "a new size starts over"
        );
    }
}
