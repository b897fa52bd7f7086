//! The management API: `POST /v2/redis/reset-password/{id}` with HTTP Basic credentials.

use crate::management::{Accounts, Registry};

use super::{Request, Response, WireError};

/// The account named by the request's `Authorization: Basic …` header.
///
/// # Errors
/// 401 ([`WireError::Management`] with a credential variant) for a missing, malformed or wrong
/// credential; an unknown email answers like a wrong key.
pub(crate) fn authenticate(accounts: &Accounts, req: &Request) -> Result<String, WireError> {
    Ok(accounts.authenticate_header(req.header("Authorization").unwrap_or(""))?)
}

/// Resets the password of database `id` owned by `account` and answers the Database record
/// with the new password in it. A database of another account answers exactly like a missing
/// one (404), as [`Registry::reset_password`] guarantees.
pub(crate) fn reset_password(
    registry: &Registry,
    account: &str,
    id: &str,
) -> Result<Response, WireError> {
    let (record, password) = registry.reset_password(account, id)?;
    Ok(Response::json(200, &record.with_password(&password)))
}
