//! The MENC format: AES-256-GCM in authenticated chunks (the STREAM construction), documented in
//! `docs/menc.md`.
//!
//! A [`Keyring`] holds the master key, derived once per process from the storage password with
//! Argon2id; every file has its own key, derived from the master key and a random per-file salt
//! with HKDF-SHA256, so opening a file costs no password hashing. [`Encryptor`] and
//! [`Decryptor`] are streaming readers: memory use is one chunk whatever the file size.
//!
//! Part of `files` (layer 4 of `scripts/check-structure`): it may import only what `files`
//! may (see `files`'s module documentation).

use std::collections::HashMap;
use std::io::{self, Read};
use std::sync::Arc;

use parking_lot::Mutex;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

use crate::error::{Error, Result};

/// The four bytes every MENC file starts with.
pub const MAGIC: &[u8; 4] = b"MENC";
/// The format version this code writes. Version 2 binds each file to its storage name (the
/// additional authenticated data is the header followed by the name); version 1 (the header
/// only) is still read.
pub const VERSION: u8 = 2;
/// The first version, whose chunks authenticate the header alone.
const VERSION_UNBOUND: u8 = 1;
/// Length of the fixed header, which starts the additional authenticated data of every chunk.
pub const HEADER_LEN: usize = 80;
/// Plaintext bytes per chunk unless configured otherwise.
pub const DEFAULT_CHUNK: u32 = 64 * 1024;
const TAG_LEN: usize = 16;
const KDF_ARGON2ID: u8 = 1;
const MIN_CHUNK: u32 = 1024;
const MAX_CHUNK: u32 = 16 << 20;
const FILE_KEY_INFO: &[u8] = b"docmeta MENC v1 file key";
const CHECK_INFO: &[u8] = b"docmeta MENC v1 password check";

/// Argon2id parameters of the master key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KdfParams {
    /// Memory cost in KiB.
    pub memory_kib: u32,
    /// Iterations.
    pub iterations: u32,
    /// Lanes.
    pub parallelism: u32,
}

impl Default for KdfParams {
    /// 64 MiB, 3 iterations, 1 lane (RFC 9106's second recommended option).
    fn default() -> Self {
        KdfParams {
            memory_kib: 64 * 1024,
            iterations: 3,
            parallelism: 1,
        }
    }
}

/// A storage password. Its bytes are wiped when it is dropped and never printed.
#[derive(Clone)]
pub struct Password(Vec<u8>);

impl Password {
    /// Wraps a password.
    pub fn new(password: impl Into<Vec<u8>>) -> Self {
        Password(password.into())
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(..)")
    }
}

impl Drop for Password {
    fn drop(&mut self) {
        self.0.fill(0);
        // Keeps the wipe from being optimised away as a dead store.
        std::hint::black_box(&mut self.0);
    }
}

type MasterKey = [u8; 32];
/// What a master key is derived with besides the password: salt and parameters.
type KdfInput = ([u8; 16], KdfParams);

/// Master keys by KDF salt and parameters: the configured one, derived at start, and any other
/// met in files (a storage written under another salt), each derived once.
pub struct Keyring {
    password: Password,
    current: ([u8; 16], KdfParams),
    keys: Mutex<HashMap<KdfInput, Arc<MasterKey>>>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyring")
            .field("kdf", &self.current.1)
            .finish_non_exhaustive()
    }
}

fn argon2(password: &[u8], salt: &[u8; 16], params: KdfParams) -> Result<MasterKey> {
    let p = argon2::Params::new(
        params.memory_kib,
        params.iterations,
        params.parallelism,
        Some(32),
    )
    .map_err(|e| Error::InvalidInput(format!("MENC key derivation parameters: {e}")))?;
    let mut key = [0u8; 32];
    argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, p)
        .hash_password_into(password, salt, &mut key)
        .map_err(|e| Error::InvalidInput(format!("MENC key derivation: {e}")))?;
    Ok(key)
}

fn hkdf(master: &MasterKey, salt: &[u8], info: &[u8]) -> [u8; 32] {
    struct Len32;
    impl ring::hkdf::KeyType for Len32 {
        fn len(&self) -> usize {
            32
        }
    }
    let mut out = [0u8; 32];
    let prk = ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, salt).extract(master);
    // Expanding 32 bytes from SHA-256 never exceeds HKDF's limit (255 blocks).
    if let Ok(okm) = prk.expand(&[info], Len32) {
        let _ = okm.fill(&mut out);
    }
    out
}

fn random<const N: usize>() -> Result<[u8; N]> {
    let mut out = [0u8; N];
    getrandom::fill(&mut out)
        .map_err(|e| Error::storage("generating random bytes", e.to_string()))?;
    Ok(out)
}

/// What `system/storage_key` records: the KDF salt and parameters of the installation and a
/// value derived from the master key, so a wrong password is reported at start rather than at
/// the first download. It holds no key and nothing a key can be computed from without the
/// password.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeyCheck {
    /// Format version of this record.
    pub version: u8,
    /// Argon2id memory cost in KiB.
    pub memory_kib: u32,
    /// Argon2id iterations.
    pub iterations: u32,
    /// Argon2id lanes.
    pub parallelism: u32,
    /// KDF salt, hex.
    pub salt: String,
    /// HKDF(master key, "docmeta MENC v1 password check"), hex.
    pub check: String,
}

impl Keyring {
    /// Derives the master key for a new installation (random salt) and returns the record to
    /// keep in `system/storage_key`.
    pub fn create(password: Password, params: KdfParams) -> Result<(Keyring, KeyCheck)> {
        let salt = random::<16>()?;
        let key = argon2(&password.0, &salt, params)?;
        let check = KeyCheck {
            version: 1,
            memory_kib: params.memory_kib,
            iterations: params.iterations,
            parallelism: params.parallelism,
            salt: crate::config::encode_hex(&salt),
            check: crate::config::encode_hex(&hkdf(&key, &salt, CHECK_INFO)),
        };
        Ok((Keyring::with_key(password, salt, params, key), check))
    }

    /// Derives the master key of an existing installation, refusing a password that does not
    /// match `check` with [`Error::Decryption`].
    pub fn open(password: Password, check: &KeyCheck) -> Result<Keyring> {
        let bad = || Error::InvalidInput("system/storage_key is damaged".to_owned());
        let salt: [u8; 16] = crate::config::decode_hex(&check.salt)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(bad)?;
        let params = KdfParams {
            memory_kib: check.memory_kib,
            iterations: check.iterations,
            parallelism: check.parallelism,
        };
        let key = argon2(&password.0, &salt, params)?;
        let expected = crate::config::decode_hex(&check.check).ok_or_else(bad)?;
        let actual = hkdf(&key, &salt, CHECK_INFO);
        // Constant time: every byte is compared whatever differs first.
        let differs = actual.len() != expected.len()
            || actual
                .iter()
                .zip(&expected)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                != 0;
        if differs {
            return Err(Error::Decryption(
                "the storage password does not match the one the encrypted storage was created \
                 with"
                    .to_owned(),
            ));
        }
        Ok(Keyring::with_key(password, salt, params, key))
    }

    fn with_key(password: Password, salt: [u8; 16], params: KdfParams, key: MasterKey) -> Keyring {
        let mut keys = HashMap::new();
        keys.insert((salt, params), Arc::new(key));
        Keyring {
            password,
            current: (salt, params),
            keys: Mutex::new(keys),
        }
    }

    fn master(&self, salt: [u8; 16], params: KdfParams) -> Result<Arc<MasterKey>> {
        if let Some(k) = self.keys.lock().get(&(salt, params)) {
            return Ok(k.clone());
        }
        // Files written under another installation salt: refuse absurd costs from a header
        // before spending them (a damaged or hostile file must not exhaust memory).
        if params.memory_kib > 4 << 20 || params.iterations > 64 || params.parallelism > 64 {
            return Err(Error::Decryption(
                "the file's key derivation parameters are out of range".to_owned(),
            ));
        }
        let key = Arc::new(argon2(&self.password.0, &salt, params)?);
        self.keys.lock().insert((salt, params), key.clone());
        Ok(key)
    }

    /// Encrypts `plain` as a MENC stream with chunks of `chunk` plaintext bytes, bound to no
    /// name (see [`Keyring::encryptor_bound`]).
    pub fn encryptor<R: Read>(&self, plain: R, chunk: u32) -> Result<Encryptor<R>> {
        self.encryptor_bound(plain, chunk, b"")
    }

    /// Encrypts `plain` as a MENC stream bound to `binding` (the storage name of a document
    /// file): every chunk authenticates the header followed by `binding`, so the stream decrypts
    /// only with the same `binding` ([`Keyring::decryptor_bound`]); a file copied over another
    /// one's name fails to decrypt.
    pub fn encryptor_bound<R: Read>(
        &self,
        plain: R,
        chunk: u32,
        binding: &[u8],
    ) -> Result<Encryptor<R>> {
        self.encryptor_version(plain, chunk, VERSION, binding)
    }

    /// [`Keyring::encryptor_bound`] writing format `version` (1: the unbound form older
    /// docmeta wrote, kept for tests that files in that form stay readable).
    pub(crate) fn encryptor_version<R: Read>(
        &self,
        plain: R,
        chunk: u32,
        version: u8,
        binding: &[u8],
    ) -> Result<Encryptor<R>> {
        let chunk = chunk.clamp(MIN_CHUNK, MAX_CHUNK);
        let (salt, params) = self.current;
        let master = self.master(salt, params)?;
        let file_salt = random::<32>()?;
        let prefix = random::<7>()?;
        let mut header = [0u8; HEADER_LEN];
        header[..4].copy_from_slice(MAGIC);
        header[4] = version;
        header[5] = KDF_ARGON2ID;
        header[8..12].copy_from_slice(&params.memory_kib.to_le_bytes());
        header[12..16].copy_from_slice(&params.iterations.to_le_bytes());
        header[16..20].copy_from_slice(&params.parallelism.to_le_bytes());
        header[20..24].copy_from_slice(&chunk.to_le_bytes());
        header[24..40].copy_from_slice(&salt);
        header[40..72].copy_from_slice(&file_salt);
        header[72..79].copy_from_slice(&prefix);
        Ok(Encryptor {
            plain,
            stream: Stream::new(&master, header, chunk, binding),
            out: header.to_vec(),
            pos: 0,
            lookahead: None,
            done: false,
        })
    }

    /// Decrypts a MENC stream bound to no name, checking every chunk before releasing its
    /// bytes.
    pub fn decryptor<R: Read>(&self, sealed: R) -> Result<Decryptor<R>> {
        self.decryptor_bound(sealed, b"")
    }

    /// Decrypts a MENC stream written for `binding` ([`Keyring::encryptor_bound`]), checking
    /// every chunk before releasing its bytes. The first chunk is checked now, so a stream of
    /// another name, a wrong key or a damaged start is refused here ([`Error::Decryption`])
    /// rather than at the first read. A version-1 stream (written before names were bound)
    /// ignores `binding`.
    pub fn decryptor_bound<R: Read>(&self, mut sealed: R, binding: &[u8]) -> Result<Decryptor<R>> {
        let mut header = [0u8; HEADER_LEN];
        read_full(&mut sealed, &mut header)
            .map_err(|e| Error::storage("reading a file", e))?
            .eq(&HEADER_LEN)
            .then_some(())
            .ok_or_else(|| decryption("the file is shorter than a MENC header"))?;
        if &header[..4] != MAGIC {
            return Err(decryption("the file is not in the MENC format"));
        }
        if !matches!(header[4], VERSION_UNBOUND | VERSION) || header[5] != KDF_ARGON2ID {
            return Err(decryption(&format!(
                "unsupported MENC version {} / KDF {}",
                header[4], header[5]
            )));
        }
        let le =
            |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        let params = KdfParams {
            memory_kib: le(8),
            iterations: le(12),
            parallelism: le(16),
        };
        let chunk = le(20);
        if !(MIN_CHUNK..=MAX_CHUNK).contains(&chunk) {
            return Err(decryption("the MENC chunk size is out of range"));
        }
        let mut salt = [0u8; 16];
        salt.copy_from_slice(&header[24..40]);
        let master = self.master(salt, params)?;
        let binding = if header[4] == VERSION_UNBOUND {
            &[][..]
        } else {
            binding
        };
        let mut decryptor = Decryptor {
            sealed,
            stream: Stream::new(&master, header, chunk, binding),
            buf: Vec::with_capacity(chunk as usize + TAG_LEN + 1),
            out: 0..0,
            done: false,
        };
        decryptor
            .next_chunk()
            .map_err(|e| io_error("reading a file", e))?;
        Ok(decryptor)
    }
}

fn decryption(why: &str) -> Error {
    Error::Decryption(format!(
        "{why} (InvalidTag: wrong password or altered file)"
    ))
}

/// The error inside the `io::Error` a [`Decryptor`] returns when a chunk fails authentication.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DecryptionFailed(pub String);

/// Maps an I/O error from a MENC stream to [`Error::Decryption`] when a chunk failed
/// authentication, and to [`Error::Storage`] otherwise.
pub fn io_error(operation: &str, e: io::Error) -> Error {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<DecryptionFailed>())
    {
        Some(failed) => Error::Decryption(failed.0.clone()),
        None => Error::storage(operation.to_owned(), e),
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The per-file key and nonce sequence.
struct Stream {
    key: LessSafeKey,
    header: [u8; HEADER_LEN],
    /// The additional authenticated data of every chunk: the header, then (version 2) the
    /// binding.
    aad: Vec<u8>,
    chunk: usize,
    counter: u32,
}

impl Stream {
    fn new(master: &MasterKey, header: [u8; HEADER_LEN], chunk: u32, binding: &[u8]) -> Stream {
        let file_key = hkdf(master, &header[40..72], FILE_KEY_INFO);
        let key = UnboundKey::new(&AES_256_GCM, &file_key)
            .map(LessSafeKey::new)
            .unwrap_or_else(|_| unreachable!("a 32-byte key is valid for AES-256-GCM"));
        let mut aad = Vec::with_capacity(HEADER_LEN + binding.len());
        aad.extend_from_slice(&header);
        aad.extend_from_slice(binding);
        Stream {
            key,
            header,
            aad,
            chunk: chunk as usize,
            counter: 0,
        }
    }

    /// The nonce of the next chunk: 7-byte prefix, 32-bit big-endian counter, last-chunk flag.
    fn nonce(&mut self, last: bool) -> io::Result<Nonce> {
        let mut n = [0u8; NONCE_LEN];
        n[..7].copy_from_slice(&self.header[72..79]);
        n[7..11].copy_from_slice(&self.counter.to_be_bytes());
        n[11] = u8::from(last);
        self.counter = self.counter.checked_add(1).ok_or_else(|| {
            io::Error::other("a MENC file holds at most 2^32 chunks; use a larger chunk size")
        })?;
        Ok(Nonce::assume_unique_for_key(n))
    }
}

/// Reads plaintext from `R` and yields the MENC bytes.
pub struct Encryptor<R> {
    plain: R,
    stream: Stream,
    out: Vec<u8>,
    pos: usize,
    /// The first byte of the next chunk, read to learn that the current one is not the last.
    lookahead: Option<u8>,
    done: bool,
}

impl<R: Read> Encryptor<R> {
    fn next_chunk(&mut self) -> io::Result<()> {
        let chunk = self.stream.chunk;
        self.out.clear();
        self.out.resize(chunk + 1, 0);
        let mut n = 0;
        if let Some(b) = self.lookahead.take() {
            self.out[0] = b;
            n = 1;
        }
        n += read_full(&mut self.plain, &mut self.out[n..])?;
        let last = n <= chunk;
        if !last {
            self.lookahead = Some(self.out[chunk]);
            n = chunk;
        }
        self.out.truncate(n);
        let nonce = self.stream.nonce(last)?;
        let tag = self
            .stream
            .key
            .seal_in_place_separate_tag(nonce, Aad::from(&self.stream.aad[..]), &mut self.out)
            .map_err(|_| io::Error::other("encryption failed"))?;
        self.out.extend_from_slice(tag.as_ref());
        self.pos = 0;
        self.done = last;
        Ok(())
    }
}

impl<R: Read> Read for Encryptor<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.out.len() {
            if self.done {
                return Ok(0);
            }
            self.next_chunk()?;
        }
        let n = buf.len().min(self.out.len() - self.pos);
        buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Reads MENC bytes from `R` and yields the plaintext, chunk by authenticated chunk.
pub struct Decryptor<R> {
    sealed: R,
    stream: Stream,
    /// The current chunk (decrypted in place) followed by at most one byte of the next.
    buf: Vec<u8>,
    out: std::ops::Range<usize>,
    done: bool,
}

impl<R: Read> Decryptor<R> {
    fn next_chunk(&mut self) -> io::Result<()> {
        let sealed_len = self.stream.chunk + TAG_LEN;
        // Keep the lookahead byte read with the previous chunk.
        let carried = if self.buf.len() == sealed_len + 1 {
            Some(self.buf[sealed_len])
        } else {
            None
        };
        self.buf.clear();
        self.buf.resize(sealed_len + 1, 0);
        let mut n = 0;
        if let Some(b) = carried {
            self.buf[0] = b;
            n = 1;
        }
        n += read_full(&mut self.sealed, &mut self.buf[n..])?;
        let last = n <= sealed_len;
        let body = if last { n } else { sealed_len };
        let failed = |why: &str| {
            io::Error::new(io::ErrorKind::InvalidData, DecryptionFailed(why.to_owned()))
        };
        if body < TAG_LEN {
            return Err(failed("the MENC file is truncated (InvalidTag)"));
        }
        let nonce = self.stream.nonce(last)?;
        let plain_len = self
            .stream
            .key
            .open_in_place(
                nonce,
                Aad::from(&self.stream.aad[..]),
                &mut self.buf[..body],
            )
            .map_err(|_| {
                failed(
                    "a chunk failed authentication (InvalidTag): wrong password, or the file was \
                     altered, truncated or reordered",
                )
            })?
            .len();
        if last {
            self.buf.truncate(body);
        }
        // Otherwise the lookahead byte stays at `buf[sealed_len]`, where `carried` finds it.
        self.out = 0..plain_len;
        self.done = last;
        Ok(())
    }
}

impl<R: Read> Read for Decryptor<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.out.is_empty() {
            if self.done {
                return Ok(0);
            }
            self.next_chunk()?;
        }
        let n = buf.len().min(self.out.len());
        buf[..n].copy_from_slice(&self.buf[self.out.start..self.out.start + n]);
        self.out.start += n;
        Ok(n)
    }
}

/// Whether `head` (the first bytes of a file) starts like a MENC file.
pub fn looks_encrypted(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cheap() -> KdfParams {
        KdfParams {
            memory_kib: 64,
            iterations: 1,
            parallelism: 1,
        }
    }

    fn seal(ring: &Keyring, plain: &[u8], chunk: u32) -> Vec<u8> {
        let mut out = Vec::new();
        ring.encryptor(plain, chunk)
            .and_then(|mut e| e.read_to_end(&mut out).map_err(|e| io_error("sealing", e)))
            .expect("seal");
        out
    }

    fn open(ring: &Keyring, sealed: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        ring.decryptor(sealed)?
            .read_to_end(&mut out)
            .map_err(|e| io_error("opening", e))?;
        Ok(out)
    }

    #[test]
    fn round_trips_at_chunk_boundaries() {
        let (ring, _) = Keyring::create(Password::new("pw"), cheap()).expect("keyring");
        for len in [0usize, 1, 1023, 1024, 1025, 2048, 5000] {
            let plain: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let sealed = seal(&ring, &plain, 1024);
            let chunks = len.div_ceil(1024).max(1);
            assert_eq!(sealed.len(), HEADER_LEN + len + chunks * TAG_LEN, "{len}");
            assert_eq!(open(&ring, &sealed).expect("open"), plain, "{len}");
        }
    }

    #[test]
    fn tampering_truncation_and_reordering_are_detected() {
        let (ring, _) = Keyring::create(Password::new("pw"), cheap()).expect("keyring");
        let plain = vec![42u8; 3000];
        let sealed = seal(&ring, &plain, 1024);
        let chunk = 1024 + TAG_LEN;
        let mut flipped = sealed.clone();
        flipped[HEADER_LEN + 10] ^= 1;
        let mut header = sealed.clone();
        header[75] ^= 1;
        let truncated_at_boundary = sealed[..HEADER_LEN + chunk].to_vec();
        let truncated = sealed[..sealed.len() - 1].to_vec();
        let mut swapped = sealed.clone();
        let (a, b) = (HEADER_LEN, HEADER_LEN + chunk);
        let first = sealed[a..b].to_vec();
        swapped.copy_within(b..b + chunk, a);
        swapped[b..b + chunk].copy_from_slice(&first);
        let mut extended = sealed.clone();
        extended.extend_from_slice(&sealed[HEADER_LEN..HEADER_LEN + chunk]);
        for (what, bad) in [
            ("bit flip", flipped),
            ("header", header),
            ("truncated at a chunk boundary", truncated_at_boundary),
            ("truncated", truncated),
            ("swapped chunks", swapped),
            ("appended chunk", extended),
        ] {
            assert!(
                matches!(open(&ring, &bad), Err(Error::Decryption(_))),
                "{what} must fail authentication"
            );
        }
    }

    #[test]
    fn a_wrong_password_is_refused_at_open_and_per_file() {
        let (ring, check) = Keyring::create(Password::new("right"), cheap()).expect("keyring");
        assert!(matches!(
            Keyring::open(Password::new("wrong"), &check),
            Err(Error::Decryption(_))
        ));
        let sealed = seal(&ring, b"secret", 1024);
        let (other, _) = Keyring::create(Password::new("wrong"), cheap()).expect("keyring");
        // Another keyring meets the file's salt and derives a (wrong) key for it.
        assert!(matches!(open(&other, &sealed), Err(Error::Decryption(_))));
        let again = Keyring::open(Password::new("right"), &check).expect("right password");
        assert_eq!(open(&again, &sealed).expect("open"), b"secret");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let (ring, _) = Keyring::create(Password::new("pw"), cheap()).expect("keyring");
        for bad in [&b""[..], b"MENC", b"PLAIN TEXT FILE", &[0u8; 200]] {
            assert!(open(&ring, bad).is_err());
        }
        let mut huge = seal(&ring, b"x", 1024);
        huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        huge[24] ^= 1;
        assert!(matches!(open(&ring, &huge), Err(Error::Decryption(_))));
    }

    #[test]
    fn a_stream_decrypts_only_with_the_name_it_was_written_for() {
        let (ring, _) = Keyring::create(Password::new("pw"), cheap()).expect("keyring");
        let mut sealed = Vec::new();
        ring.encryptor_bound(&b"the invoice"[..], 1024, b"ab/0123")
            .and_then(|mut e| {
                e.read_to_end(&mut sealed)
                    .map_err(|e| io_error("sealing", e))
            })
            .expect("seal");
        let open_as = |binding: &[u8]| -> Result<Vec<u8>> {
            let mut out = Vec::new();
            ring.decryptor_bound(&sealed[..], binding)?
                .read_to_end(&mut out)
                .map_err(|e| io_error("opening", e))?;
            Ok(out)
        };
        assert_eq!(open_as(b"ab/0123").expect("its own name"), b"the invoice");
        // Refused when the decryptor is made, before any byte is released.
        for other in [&b"ab/0124"[..], b"", b"ab/012"] {
            assert!(
                matches!(
                    ring.decryptor_bound(&sealed[..], other),
                    Err(Error::Decryption(_))
                ),
                "{other:?}"
            );
        }
        // Rewriting the version byte to 1 (unbound) does not strip the binding.
        let mut downgraded = sealed.clone();
        downgraded[4] = VERSION_UNBOUND;
        assert!(matches!(
            ring.decryptor_bound(&downgraded[..], b""),
            Err(Error::Decryption(_))
        ));
    }

    #[test]
    fn version_1_streams_are_still_read() {
        let (ring, _) = Keyring::create(Password::new("pw"), cheap()).expect("keyring");
        let plain: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        // Written as docmeta wrote every file before names were bound.
        let mut sealed = Vec::new();
        ring.encryptor_version(&plain[..], 1024, VERSION_UNBOUND, b"")
            .and_then(|mut e| {
                e.read_to_end(&mut sealed)
                    .map_err(|e| io_error("sealing", e))
            })
            .expect("seal");
        assert_eq!(sealed[4], 1);
        let mut out = Vec::new();
        ring.decryptor_bound(&sealed[..], b"ab/any-name")
            .expect("a version-1 file opens under any name")
            .read_to_end(&mut out)
            .expect("read");
        assert_eq!(out, plain);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn round_trip_random_sizes(len in 0usize..20_000, chunk in 1024u32..4096, seed: u8) {
            let ring = Keyring::with_key(Password::new("p"), [1; 16], cheap(), [seed; 32]);
            let plain: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(seed)).collect();
            let sealed = seal(&ring, &plain, chunk);
            proptest::prop_assert_eq!(open(&ring, &sealed).expect("open"), plain);
        }
    }
}
