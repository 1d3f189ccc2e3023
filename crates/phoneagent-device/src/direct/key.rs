//! The host's ADB RSA key (SPEC D1, direct mode): `<config dir>/phoneagent/adbkey`, a 2048-bit
//! RSA private key in PEM (PKCS#8, the format `adb` writes to `~/.android/adbkey`; PKCS#1 is
//! read too), created with 0600 permissions on first use — or the user's existing
//! `~/.android/adbkey` when there is one and we have none, so a phone that already trusts this
//! computer's adb does not prompt again.
//!
//! The phone authenticates the host by sending a 20-byte token that the host signs
//! (RSA PKCS#1 v1.5 with the SHA-1 DigestInfo, the token taken as the digest, as adb's
//! `RSA_sign(NID_sha1, …)` does); an unknown key is then offered as the public key in Android's
//! `RSAPublicKey` struct encoding (base64 + ` user@host`), and the phone shows
//! "Allow USB debugging?" with its fingerprint.

use crate::Result;
use crate::types::DeviceError;
use base64::Engine;
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use rsa::traits::PublicKeyParts;
use rsa::{BigUint, Pkcs1v15Sign, RsaPrivateKey};
use std::path::{Path, PathBuf};

/// RSA modulus size adb uses, in bits (the Android public key format is fixed to it).
pub const ADB_KEY_BITS: usize = 2048;
const MODULUS_WORDS: usize = ADB_KEY_BITS / 32;

/// Where the key was found or made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// Our own key file existed.
    Existing,
    /// The user's `~/.android/adbkey` was reused (we had none).
    AndroidAdbKey,
    /// A new key was generated and saved.
    Created,
}

/// The host's ADB key pair.
#[derive(Clone)]
pub struct AdbKey {
    key: RsaPrivateKey,
    path: PathBuf,
    source: KeySource,
}

impl std::fmt::Debug for AdbKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdbKey")
            .field("path", &self.path)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

fn key_err(path: &Path, what: &str, e: impl std::fmt::Display) -> DeviceError {
    DeviceError::Config(format!(
        "{what} the ADB key {}: {e} (delete the file to make a new key; the phone will ask \"Allow USB debugging?\" again)",
        path.display()
    ))
}

/// `PHONEAGENT_HOME`, else the platform config dir (`~/.config/phoneagent` on Linux) — the
/// same directory the model settings use.
///
/// # Errors
/// [`DeviceError::Config`] when no home directory is known.
pub fn config_dir() -> Result<PathBuf> {
    if let Some(h) = std::env::var_os("PHONEAGENT_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(h));
    }
    directories::ProjectDirs::from("", "", "phoneagent")
        .map(|d| d.config_dir().to_path_buf())
        .ok_or_else(|| {
            DeviceError::Config(
                "cannot find a config directory for the ADB key (no HOME?): set PHONEAGENT_HOME to a writable directory".into(),
            )
        })
}

/// `~/.android/adbkey` (or `$ANDROID_USER_HOME/adbkey`), when a home directory is known.
pub fn android_adbkey_path() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("ANDROID_USER_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(h).join("adbkey"));
    }
    directories::BaseDirs::new().map(|b| b.home_dir().join(".android").join("adbkey"))
}

impl AdbKey {
    /// The key of this user: `<config dir>/adbkey`, else `~/.android/adbkey`, else a new key
    /// saved to `<config dir>/adbkey`.
    ///
    /// # Errors
    /// [`DeviceError::Config`] when a key file is unreadable/corrupt or cannot be written.
    pub fn for_user() -> Result<Self> {
        Self::load_or_create(
            &config_dir()?.join("adbkey"),
            android_adbkey_path().as_deref(),
        )
    }

    /// Load `path`; if it does not exist, reuse `android_fallback` when that exists; else
    /// generate a key and write it to `path` (0600, parent directories created) along with
    /// `path.pub` (the public key line, as adb writes `adbkey.pub`).
    ///
    /// # Errors
    /// [`DeviceError::Config`] naming the file.
    pub fn load_or_create(path: &Path, android_fallback: Option<&Path>) -> Result<Self> {
        if path.exists() {
            return Self::load(path, KeySource::Existing);
        }
        if let Some(f) = android_fallback.filter(|f| f.is_file()) {
            let k = Self::load(f, KeySource::AndroidAdbKey)?;
            tracing::info!(path = %f.display(), "using the existing adb key");
            return Ok(k);
        }
        let key = RsaPrivateKey::new(&mut rsa::rand_core::OsRng, ADB_KEY_BITS)
            .map_err(|e| key_err(path, "cannot generate", e))?;
        let pem = key
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|e| key_err(path, "cannot encode", e))?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| key_err(path, "cannot create the directory of", e))?;
        }
        write_private(path, pem.as_bytes()).map_err(|e| key_err(path, "cannot write", e))?;
        let me = Self {
            key,
            path: path.to_path_buf(),
            source: KeySource::Created,
        };
        let mut pub_path = path.as_os_str().to_owned();
        pub_path.push(".pub");
        if let Err(e) = std::fs::write(&pub_path, format!("{}\n", me.android_public_key())) {
            tracing::warn!("cannot write {}: {e}", PathBuf::from(pub_path).display());
        }
        tracing::info!(path = %path.display(), "created a new ADB key");
        Ok(me)
    }

    fn load(path: &Path, source: KeySource) -> Result<Self> {
        let pem = std::fs::read_to_string(path).map_err(|e| key_err(path, "cannot read", e))?;
        let key = RsaPrivateKey::from_pkcs8_pem(&pem)
            .or_else(|_| RsaPrivateKey::from_pkcs1_pem(&pem))
            .map_err(|e| key_err(path, "cannot parse (expected a PEM RSA private key)", e))?;
        if key.size() * 8 != ADB_KEY_BITS {
            return Err(key_err(
                path,
                "cannot use",
                format!("it is {} bits; ADB needs {ADB_KEY_BITS}", key.size() * 8),
            ));
        }
        Ok(Self {
            key,
            path: path.to_path_buf(),
            source,
        })
    }

    /// The key file in use.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the key existed, came from `~/.android/adbkey` or was created now.
    pub fn source(&self) -> KeySource {
        self.source
    }

    /// Sign an AUTH token (20 bytes from the phone) as adbd expects.
    ///
    /// # Errors
    /// [`DeviceError::Protocol`] when the token does not fit (longer than a SHA-1 digest).
    pub fn sign_token(&self, token: &[u8]) -> Result<Vec<u8>> {
        self.key
            .sign(Pkcs1v15Sign::new::<sha1::Sha1>(), token)
            .map_err(|e| {
                DeviceError::Protocol(format!(
                    "cannot sign the phone's {}-byte AUTH token: {e}",
                    token.len()
                ))
            })
    }

    /// The public key as adb sends it (AUTH RSAPUBLICKEY) and writes to `adbkey.pub`:
    /// base64 of Android's `RSAPublicKey` struct, a space and `user@host`.
    pub fn android_public_key(&self) -> String {
        let b64 = base64::engine::general_purpose::STANDARD
            .encode(android_pubkey_struct(self.key.n(), self.key.e()));
        format!("{b64} {}", user_at_host())
    }
}

/// Android's `RSAPublicKey` struct: u32 modulus size in words (64), u32 n0inv
/// (-1/n[0] mod 2^32), modulus (LE, 256 bytes), rr = 2^4096 mod n (LE, 256 bytes), u32 exponent.
pub(crate) fn android_pubkey_struct(n: &BigUint, e: &BigUint) -> Vec<u8> {
    let n_le = le_padded(n, MODULUS_WORDS * 4);
    let n0 = u32::from_le_bytes([n_le[0], n_le[1], n_le[2], n_le[3]]);
    // Inverse of an odd n0 mod 2^32 by Newton's iteration (each step doubles the good bits).
    let mut inv: u32 = 1;
    for _ in 0..5 {
        inv = inv.wrapping_mul(2u32.wrapping_sub(n0.wrapping_mul(inv)));
    }
    let n0inv = inv.wrapping_neg();
    let rr = (BigUint::from(1u32) << (2 * ADB_KEY_BITS)) % n;
    let e32 = e
        .to_bytes_le()
        .iter()
        .take(4)
        .enumerate()
        .fold(0u32, |a, (i, b)| a | (u32::from(*b) << (8 * i)));
    let mut out = Vec::with_capacity(8 + 2 * MODULUS_WORDS * 4 + 4);
    out.extend_from_slice(&(MODULUS_WORDS as u32).to_le_bytes());
    out.extend_from_slice(&n0inv.to_le_bytes());
    out.extend_from_slice(&n_le);
    out.extend_from_slice(&le_padded(&rr, MODULUS_WORDS * 4));
    out.extend_from_slice(&e32.to_le_bytes());
    out
}

fn le_padded(v: &BigUint, len: usize) -> Vec<u8> {
    let mut b = v.to_bytes_le();
    b.resize(len, 0);
    b
}

fn user_at_host() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("USERNAME"))
        .unwrap_or_else(|_| "user".into());
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "phoneagent".into());
    format!("{user}@{host}")
}

#[cfg(unix)]
fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsa::RsaPublicKey;

    /// Decode the Android struct back into (n, e), as adbd does.
    fn decode(b64_line: &str) -> (BigUint, BigUint, u32) {
        let b64 = b64_line.split(' ').next().unwrap();
        let raw = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        assert_eq!(raw.len(), 524);
        assert_eq!(u32::from_le_bytes(raw[0..4].try_into().unwrap()), 64);
        let n0inv = u32::from_le_bytes(raw[4..8].try_into().unwrap());
        let n = BigUint::from_bytes_le(&raw[8..264]);
        let e = u32::from_le_bytes(raw[520..524].try_into().unwrap());
        (n, BigUint::from(e), n0inv)
    }

    #[test]
    fn create_reuse_sign_and_encode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("phoneagent").join("adbkey");
        let k = AdbKey::load_or_create(&path, None).unwrap();
        assert_eq!(k.source(), KeySource::Created);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "key file mode {mode:o}");
        }
        let pem = std::fs::read_to_string(&path).unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{pem}");
        let pubf =
            std::fs::read_to_string(dir.path().join("phoneagent").join("adbkey.pub")).unwrap();
        assert_eq!(pubf.trim(), k.android_public_key());

        // Second use: the same key is loaded, not regenerated.
        let k2 = AdbKey::load_or_create(&path, None).unwrap();
        assert_eq!(k2.source(), KeySource::Existing);
        assert_eq!(k2.android_public_key(), k.android_public_key());

        // The Android encoding holds the real modulus/exponent and a correct n0inv.
        let (n, e, n0inv) = decode(&k.android_public_key());
        assert_eq!(&n, k.key.n());
        assert_eq!(&e, k.key.e());
        let n0 = (k.key.n() % BigUint::from(1u64 << 32)).to_bytes_le();
        let mut w = [0u8; 4];
        w[..n0.len().min(4)].copy_from_slice(&n0[..n0.len().min(4)]);
        assert_eq!(
            u32::from_le_bytes(w).wrapping_mul(n0inv),
            u32::MAX,
            "n0 * n0inv == -1"
        );

        // The token signature verifies with the decoded public key (what adbd checks).
        let token = [7u8; 20];
        let sig = k.sign_token(&token).unwrap();
        assert_eq!(sig.len(), 256);
        let pubk = RsaPublicKey::new(n, e).unwrap();
        pubk.verify(Pkcs1v15Sign::new::<sha1::Sha1>(), &token, &sig)
            .unwrap();
        assert!(
            pubk.verify(Pkcs1v15Sign::new::<sha1::Sha1>(), &[8u8; 20], &sig)
                .is_err()
        );
    }

    #[test]
    fn android_key_is_reused_when_we_have_none() {
        let dir = tempfile::tempdir().unwrap();
        let android = dir.path().join("android-adbkey");
        let made = AdbKey::load_or_create(&android, None).unwrap();
        let ours = dir.path().join("cfg").join("adbkey");
        let k = AdbKey::load_or_create(&ours, Some(&android)).unwrap();
        assert_eq!(k.source(), KeySource::AndroidAdbKey);
        assert_eq!(k.path(), android.as_path());
        assert_eq!(k.android_public_key(), made.android_public_key());
        assert!(
            !ours.exists(),
            "nothing is written when the adb key is reused"
        );
    }

    #[test]
    fn corrupt_key_names_the_file_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("adbkey");
        std::fs::write(&path, "not a key").unwrap();
        let e = AdbKey::load_or_create(&path, None).unwrap_err();
        let s = e.to_string();
        assert!(matches!(e, DeviceError::Config(_)));
        assert!(s.contains("adbkey") && s.contains("delete the file"), "{s}");
    }
}
