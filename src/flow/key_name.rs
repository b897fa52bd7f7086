//! [`KeyName`]: a flow-control key's name as the engine stores and hands it out.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// Longest name stored inline.
const INLINE: usize = 23;

/// A flow-control key's name, as [`Dispatch::key`](super::Dispatch::key) hands it out.
///
/// Names of up to 23 bytes (most real keys: tenant or endpoint ids) are stored inline, so the
/// engine compares a key against its slot without following a pointer, and a dispatch copies
/// the name (three aligned words) without touching a reference count; longer names share one
/// allocation. Cloning is O(1) either way. It reads as a `&str` (`Deref`, `AsRef`, `Borrow`,
/// `Display`).
///
/// # Examples
/// ```
/// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
/// let mut fc = FlowControl::new(FlowConfig::default());
/// let now = Timestamp::from_millis(0);
/// fc.publish(Some("tenant-7"), Some("rate=5".parse()?), "m", now)?;
/// let key = fc.poll_dispatch(now).and_then(|d| d.key).expect("keyed");
/// assert_eq!(key, "tenant-7");
/// assert_eq!(key.len(), 8);
/// assert_eq!(format!("{key}"), "tenant-7");
/// # Ok::<(), flowvec::flow::FlowError>(())
/// ```
#[derive(Clone)]
pub struct KeyName(Repr);

#[derive(Clone)]
enum Repr {
    Inline(Inline),
    Shared(Arc<str>),
}

/// Up to [`INLINE`] bytes of UTF-8, then the length in the last byte. Word-aligned, so a copy
/// is whole-word moves: a byte-packed layout (such as `smol_str`'s, tried first) made the
/// compiler copy it in odd-sized pieces whose reassembly stalled store forwarding, +15-25 ns
/// per dispatch measured on the one-key cycle.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct Inline([u8; INLINE + 1]);

impl KeyName {
    /// The name as a string slice.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // Built from a `&str` and never modified, so always valid; the check is cheap.
            Repr::Inline(_) => std::str::from_utf8(self.as_bytes()).unwrap_or_default(),
            Repr::Shared(s) => s,
        }
    }

    /// The name's bytes (no UTF-8 check: the engine compares keys this way).
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline(Inline(b)) => &b[..usize::from(b[INLINE]).min(INLINE)],
            Repr::Shared(s) => s.as_bytes(),
        }
    }
}

impl PartialEq for KeyName {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for KeyName {}

impl PartialOrd for KeyName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for KeyName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl Hash for KeyName {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl From<&str> for KeyName {
    fn from(name: &str) -> Self {
        if name.len() <= INLINE {
            let mut b = [0u8; INLINE + 1];
            b[..name.len()].copy_from_slice(name.as_bytes());
            b[INLINE] = name.len() as u8;
            Self(Repr::Inline(Inline(b)))
        } else {
            Self(Repr::Shared(Arc::from(name)))
        }
    }
}

impl From<KeyName> for String {
    fn from(name: KeyName) -> Self {
        name.as_str().to_owned()
    }
}

impl Deref for KeyName {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for KeyName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for KeyName {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<str> for KeyName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for KeyName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Display for KeyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for KeyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_names_read_back_and_compare_as_strings() {
        let long = "k".repeat(512);
        for name in [
            "a",
            "tenant-123456",
            "exactly-23-bytes-long!!",
            long.as_str(),
        ] {
            let k = KeyName::from(name);
            assert_eq!(k.as_str(), name);
            assert_eq!(k, name);
            assert_eq!(k.clone(), k);
            assert_eq!(String::from(k.clone()), name);
            assert_eq!(format!("{k:?}"), format!("{name:?}"));
        }
        assert_ne!(KeyName::from("a"), KeyName::from("b"));
    }

    #[test]
    fn an_optional_name_is_four_words() {
        assert_eq!(size_of::<Option<KeyName>>(), 32);
    }

    #[test]
    fn order_and_hash_follow_the_string() {
        use std::collections::hash_map::DefaultHasher;
        let long = "z".repeat(40);
        let mut names: Vec<KeyName> = ["b", "a", long.as_str(), "ab"]
            .into_iter()
            .map(KeyName::from)
            .collect();
        names.sort();
        let sorted: Vec<&str> = names.iter().map(KeyName::as_str).collect();
        assert_eq!(sorted, ["a", "ab", "b", long.as_str()]);
        let hash = |x: &dyn Fn(&mut DefaultHasher)| {
            let mut h = DefaultHasher::new();
            x(&mut h);
            h.finish()
        };
        assert_eq!(
            hash(&|h| KeyName::from("ab").hash(h)),
            hash(&|h| "ab".hash(h))
        );
    }
}
