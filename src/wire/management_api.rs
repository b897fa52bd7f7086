//! The management API: `POST /v2/redis/reset-password/{id}` with HTTP Basic credentials.

use crate::management::{Accounts, DatabaseSecrets, Registry};
use crate::state::Command;

use super::write::{Prepared, ReplyKind, write};
use super::{Request, WireError};

/// The account named by the request's `Authorization: Basic …` header.
///
/// # Errors
/// 401 ([`WireError::Management`] with a credential variant) for a missing, malformed or wrong
/// credential; an unknown email answers like a wrong key.
pub(crate) fn authenticate(accounts: &Accounts, req: &Request) -> Result<String, WireError> {
    Ok(accounts.authenticate_header(req.header("Authorization").unwrap_or(""))?)
}

/// The command that resets the password of database `id` owned by `account`, answered with
/// the Database record and the new password in it. The password is drawn here and stays in the
/// [`Reply`](super::Reply); the command carries only its hash. A database of another account
/// answers exactly like a missing one (404), before anything is drawn or logged.
pub(crate) fn reset_password(
    registry: &Registry,
    account: &str,
    id: &str,
) -> Result<Prepared, WireError> {
    registry.get(account, id)?;
    let (secrets, password) = DatabaseSecrets::generate()?;
    Ok(write(
        Command::ResetPassword {
            account: account.to_owned(),
            id: id.to_owned(),
            secrets,
        },
        ReplyKind::Password(password),
    ))
}
