//! [`KeyName`]: a flow-control key's name as the engine stores and hands it out.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

use smol_str::SmolStr;

/// A flow-control key's name, as [`Dispatch::key`](super::Dispatch::key) hands it out.
///
/// Names of up to 23 bytes (most real keys: tenant or endpoint ids) are stored inline, so the
/// engine compares a key against its slot without following a pointer, and a dispatch copies
/// the name without touching a reference count; longer names share one allocation. Cloning is
/// O(1) either way. It reads as a `&str` (`Deref`, `AsRef`, `Borrow`, `Display`).
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
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyName(SmolStr);

impl KeyName {
    /// The name as a string slice.
    #[must_use]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl From<&str> for KeyName {
    fn from(name: &str) -> Self {
        Self(SmolStr::new(name))
    }
}

impl From<KeyName> for String {
    fn from(name: KeyName) -> Self {
        name.0.into()
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
    fn an_optional_name_costs_no_more_than_a_shared_str() {
        assert!(size_of::<Option<KeyName>>() <= 24);
    }
}
