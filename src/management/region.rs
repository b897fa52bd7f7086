//! [`Region`]: where a database lives, an *open* value set.

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares the known regions once: variant, wire string.
macro_rules! regions {
    ($( $(#[$vmeta:meta])* $variant:ident => $wire:literal ),+ $(,)?) => {
        /// A region (wire fields `region`, `primary_region`, and the items of `read_regions`,
        /// `primary_members`, `all_members`).
        ///
        /// **An open set.** The reference's lists of regions differ between its own documents
        /// and grow as the platform opens data centres: one version of its OpenAPI `Database`
        /// schema lists 13 AWS regions for `primary_region`, a later one adds five more
        /// (`af-south-1` and four GCP names such as `us-central1`), the create request adds
        /// others, and legacy regional databases report their AWS region as `region` where
        /// current ones report `global`. A record from a newer reference must still load, so an
        /// unknown name becomes [`Region::Other`] instead of an error (contrast the closed sets in
        /// [`DatabaseState`](super::DatabaseState) and friends, which describe behaviour).
        ///
        /// Known names always parse to their own variant, and equality and hashing go by the
        /// wire string, so `Region::Other("us-east-1".into()) == Region::UsEast1`.
        ///
        /// # Examples
        /// ```
        /// use flowvec::management::Region;
        /// assert_eq!(Region::from("eu-west-1"), Region::EuWest1);
        /// let future = Region::from("mars-north-1");
        /// assert_eq!(future, Region::Other("mars-north-1".to_owned()));
        /// assert_eq!(serde_json::to_string(&future)?, r#""mars-north-1""#);
        /// # Ok::<(), serde_json::Error>(())
        /// ```
        #[derive(Debug, Clone, Eq)]
        #[non_exhaustive]
        pub enum Region {
            $( $(#[$vmeta])* $variant, )+
            /// A region name this version of the crate does not know, kept verbatim.
            Other(String),
        }

        impl Region {
            /// Every known region (not [`Region::Other`]), in declaration order.
            pub const KNOWN: &'static [Region] = &[$(Region::$variant),+];

            /// The exact wire string.
            #[must_use]
            pub fn as_str(&self) -> &str {
                match self {
                    $(Region::$variant => $wire,)+
                    Region::Other(name) => name,
                }
            }

            /// The known region with this wire name, if any.
            fn known(name: &str) -> Option<Self> {
                match name {
                    $($wire => Some(Region::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

regions! {
    /// `global`: the region of every current (multi-region) database.
    Global => "global",
    /// `us-east-1`.
    UsEast1 => "us-east-1",
    /// `us-east-2`.
    UsEast2 => "us-east-2",
    /// `us-west-1`.
    UsWest1 => "us-west-1",
    /// `us-west-2`.
    UsWest2 => "us-west-2",
    /// `ca-central-1`.
    CaCentral1 => "ca-central-1",
    /// `eu-central-1`.
    EuCentral1 => "eu-central-1",
    /// `eu-west-1`.
    EuWest1 => "eu-west-1",
    /// `eu-west-2`.
    EuWest2 => "eu-west-2",
    /// `sa-east-1`.
    SaEast1 => "sa-east-1",
    /// `ap-south-1`.
    ApSouth1 => "ap-south-1",
    /// `ap-northeast-1`.
    ApNortheast1 => "ap-northeast-1",
    /// `ap-southeast-1`.
    ApSoutheast1 => "ap-southeast-1",
    /// `ap-southeast-2`.
    ApSoutheast2 => "ap-southeast-2",
    /// `af-south-1`.
    AfSouth1 => "af-south-1",
    /// `us-central1` (GCP).
    GcpUsCentral1 => "us-central1",
    /// `us-east4` (GCP).
    GcpUsEast4 => "us-east4",
    /// `europe-west1` (GCP).
    GcpEuropeWest1 => "europe-west1",
    /// `asia-northeast1` (GCP).
    GcpAsiaNortheast1 => "asia-northeast1",
}

impl Region {
    /// Whether this is one of the names this crate knows ([`Region::KNOWN`]).
    #[must_use]
    pub fn is_known(&self) -> bool {
        Self::known(self.as_str()).is_some()
    }
}

impl From<&str> for Region {
    fn from(name: &str) -> Self {
        Self::known(name).unwrap_or_else(|| Region::Other(name.to_owned()))
    }
}

impl From<String> for Region {
    fn from(name: String) -> Self {
        Self::known(&name).unwrap_or(Region::Other(name))
    }
}

impl PartialEq for Region {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Hash for Region {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Region {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Region {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Region::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_round_trip_to_their_variant() {
        for region in Region::KNOWN {
            assert!(region.is_known());
            let parsed = Region::from(region.as_str());
            assert!(
                !matches!(parsed, Region::Other(_)),
                "{region} parsed as Other"
            );
            assert_eq!(&parsed, region);
            let json = serde_json::to_string(region).expect("serialises");
            assert_eq!(
                &serde_json::from_str::<Region>(&json).expect("deserialises"),
                region
            );
        }
    }

    #[test]
    fn unknown_names_are_kept_verbatim() {
        let region: Region = serde_json::from_str(r#""us-central-1""#).expect("open set");
        assert_eq!(region, Region::Other("us-central-1".to_owned()));
        assert!(!region.is_known());
        assert_eq!(
            serde_json::to_string(&region).expect("serialises"),
            r#""us-central-1""#
        );
    }

    #[test]
    fn a_hand_made_other_with_a_known_name_equals_the_variant() {
        use std::collections::HashSet;
        let other = Region::Other("eu-west-1".to_owned());
        assert_eq!(other, Region::EuWest1);
        let set: HashSet<Region> = [other, Region::EuWest1].into_iter().collect();
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn non_string_is_rejected() {
        assert!(serde_json::from_str::<Region>("1").is_err());
    }
}
