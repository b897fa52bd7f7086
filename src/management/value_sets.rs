//! The record's closed value sets: [`DatabaseState`], [`Plan`], [`DatabaseType`],
//! [`ResourceSize`] and [`StorageEngine`], each with its exact wire strings.
//!
//! These are *closed*: an unknown string is an error naming the value and listing the accepted
//! ones, both from serde (`unknown variant "x", expected one of …`) and from
//! [`FromStr`](std::str::FromStr) ([`ManagementError::UnknownValue`]). They describe what a
//! database *is* (its lifecycle state, its billing plan, its size and engine), so a host acting
//! on a value it does not know would be guessing; failing loudly is safer. Regions are different
//! (an open set, see [`Region`](super::Region)).

use std::fmt;
use std::str::FromStr;

use super::ManagementError;

/// Declares a closed wire enum with `as_str`, `ALL`, `Display`, `FromStr` and serde.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $name:ident, field = $field:literal {
            $(#[$fmeta:meta])* $first:ident => $fwire:literal
            $(, $(#[$vmeta:meta])* $variant:ident => $wire:literal )* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $(#[$fmeta])* #[serde(rename = $fwire)] $first,
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant, )*
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[Self::$first $(, Self::$variant)*];

            /// The exact wire string.
            #[must_use]
            pub const fn as_str(self) -> &'static str {
                match self {
                    Self::$first => $fwire,
                    $(Self::$variant => $wire,)*
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = ManagementError;

            /// Parses the exact (case-sensitive) wire string.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $fwire => Ok(Self::$first),
                    $($wire => Ok(Self::$variant),)*
                    _ => Err(ManagementError::UnknownValue {
                        field: $field,
                        value: ManagementError::quote(s),
                        expected: concat!("\"", $fwire, "\"" $(, ", \"", $wire, "\"")*),
                    }),
                }
            }
        }
    };
}

wire_enum! {
    /// Lifecycle state of a database (wire field `state`).
    ///
    /// The reference's OpenAPI schema lists `active`, `suspended`, `passive`; its older endpoint
    /// pages describe `active` or `deleted`. All four are accepted.
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::DatabaseState;
    /// assert_eq!("active".parse::<DatabaseState>()?, DatabaseState::Active);
    /// assert!("Active".parse::<DatabaseState>().is_err());
    /// # Ok::<(), flowvec::management::ManagementError>(())
    /// ```
    DatabaseState, field = "state" {
        /// Serving requests.
        Active => "active",
        /// Suspended (e.g. over quota or unpaid).
        Suspended => "suspended",
        /// Passive (inactive, e.g. an idle free database).
        Passive => "passive",
        /// Deleted.
        Deleted => "deleted",
    }
}

wire_enum! {
    /// Payment plan of a database (wire field `type`).
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::Plan;
    /// assert_eq!(serde_json::to_string(&Plan::Payg)?, r#""payg""#);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    Plan, field = "type" {
        /// Free tier.
        Free => "free",
        /// Pay as you go.
        Payg => "payg",
        /// Pro.
        Pro => "pro",
        /// Paid (fixed plans).
        Paid => "paid",
    }
}

wire_enum! {
    /// Type of a database in terms of pricing model (wire field `database_type`); note the
    /// spaces and capitals of the wire strings.
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::DatabaseType;
    /// assert_eq!(DatabaseType::PayAsYouGo.as_str(), "Pay as You Go");
    /// ```
    DatabaseType, field = "database_type" {
        /// `Free`.
        Free => "Free",
        /// `Pay as You Go`.
        PayAsYouGo => "Pay as You Go",
        /// `Enterprise`.
        Enterprise => "Enterprise",
    }
}

wire_enum! {
    /// Resource allocation tier (wire field `db_resource_size`).
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::ResourceSize;
    /// assert_eq!("3XL".parse::<ResourceSize>()?, ResourceSize::Xxxl);
    /// # Ok::<(), flowvec::management::ManagementError>(())
    /// ```
    ResourceSize, field = "db_resource_size" {
        /// `S`.
        S => "S",
        /// `M`.
        M => "M",
        /// `L`.
        L => "L",
        /// `XL`.
        Xl => "XL",
        /// `XXL`.
        Xxl => "XXL",
        /// `3XL`.
        Xxxl => "3XL",
    }
}

wire_enum! {
    /// Storage engine of a database (wire field `db_type`).
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::StorageEngine;
    /// assert_eq!(StorageEngine::Pebble.to_string(), "pebble");
    /// ```
    StorageEngine, field = "db_type" {
        /// `bolt`.
        Bolt => "bolt",
        /// `badger`.
        Badger => "badger",
        /// `pebble`.
        Pebble => "pebble",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T>(all: &[T])
    where
        T: Copy + PartialEq + fmt::Debug + fmt::Display + FromStr<Err = ManagementError>,
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        for &value in all {
            let wire = value.to_string();
            assert_eq!(wire.parse::<T>().expect("own wire string"), value);
            let json = serde_json::to_string(&value).expect("serialises");
            assert_eq!(json, format!("\"{wire}\""));
            assert_eq!(
                serde_json::from_str::<T>(&json).expect("deserialises"),
                value
            );
        }
    }

    #[test]
    fn every_value_round_trips_through_display_fromstr_and_serde() {
        round_trips(DatabaseState::ALL);
        round_trips(Plan::ALL);
        round_trips(DatabaseType::ALL);
        round_trips(ResourceSize::ALL);
        round_trips(StorageEngine::ALL);
    }

    #[test]
    fn unknown_value_error_names_field_value_and_choices() {
        let err = "XXXL".parse::<ResourceSize>().unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"unknown db_resource_size: "XXXL", expected one of "S", "M", "L", "XL", "XXL", "3XL""#
        );
    }
}
