//! [`Password`]: a database password in the clear, handed out once and kept out of logs.

use std::fmt;

use super::ManagementError;
use super::secret;

/// A database password in the clear, as returned by
/// [`Registry::reset_password`](super::Registry::reset_password).
///
/// Generated from the OS CSPRNG: 32 random bytes (256 bits of entropy) as URL-safe base64
/// without padding, so 43 characters of `A-Z a-z 0-9 - _`. The registry keeps only a salted
/// hash; this value is the only copy, and the caller passes it on to the user.
///
/// It does not leak by accident: `Debug` prints `Password(<redacted>)`, and there is no
/// `Display`, `Serialize` or `Deref<Target = str>`. Reading it takes an explicit
/// [`expose`](Self::expose).
///
/// # Examples
/// ```
/// use flowvec::management::Password;
/// let password = Password::generate()?;
/// assert_eq!(format!("{password:?}"), "Password(<redacted>)");
/// assert_eq!(password.expose().len(), 43);
/// # Ok::<(), flowvec::management::ManagementError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    /// Length of every generated password, in characters.
    pub const LEN: usize = 43;

    /// A new password from the OS CSPRNG (256 bits of entropy).
    ///
    /// # Errors
    /// [`ManagementError::Randomness`] if the OS random number generator fails.
    pub fn generate() -> Result<Self, ManagementError> {
        secret::generate_token().map(Self)
    }

    /// The password in the clear. Call it only where the password is meant to be shown.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_passwords_have_the_documented_shape_and_differ() {
        let a = Password::generate().expect("OS RNG");
        let b = Password::generate().expect("OS RNG");
        assert_eq!(a.expose().len(), Password::LEN);
        assert_ne!(a, b);
        assert!(!format!("{a:?}").contains(a.expose()));
    }
}
