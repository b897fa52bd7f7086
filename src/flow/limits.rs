//! [`Limits`]: the flow-control header value (`parallelism=5,rate=10,period=1m`, DESIGN §1.2).

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::FlowError;

const SECS_PER_MINUTE: u32 = 60;
const SECS_PER_HOUR: u32 = 60 * SECS_PER_MINUTE;
const SECS_PER_DAY: u32 = 24 * SECS_PER_HOUR;

/// The length of a rate window: a whole number of seconds from 1 s to 7 days.
///
/// Parsed from an integer with unit `s`, `m`, `h` or `d`, or a bare integer meaning seconds;
/// printed with the largest unit that divides it exactly (`90s`, `2m`, `1d`).
///
/// # Examples
/// ```
/// use flowvec::flow::Period;
/// let p: Period = "120s".parse()?;
/// assert_eq!(p.as_secs(), 120);
/// assert_eq!(p.to_string(), "2m");
/// assert!("8d".parse::<Period>().is_err());
/// # Ok::<(), flowvec::flow::FlowError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Period(u32);

impl Period {
    /// One second, the default period.
    pub const ONE_SECOND: Self = Self(1);
    /// The longest period, 7 days.
    pub const MAX: Self = Self(7 * SECS_PER_DAY);

    /// A period of `secs` seconds, or `None` outside 1 s ..= 7 d.
    #[must_use]
    pub const fn from_secs(secs: u32) -> Option<Self> {
        if secs >= 1 && secs <= Self::MAX.0 {
            Some(Self(secs))
        } else {
            None
        }
    }

    /// The period in seconds.
    #[must_use]
    pub const fn as_secs(self) -> u32 {
        self.0
    }

    /// The period in milliseconds.
    #[must_use]
    pub const fn as_millis(self) -> u64 {
        self.0 as u64 * 1000
    }
}

impl Default for Period {
    fn default() -> Self {
        Self::ONE_SECOND
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        if s.is_multiple_of(SECS_PER_DAY) {
            write!(f, "{}d", s / SECS_PER_DAY)
        } else if s.is_multiple_of(SECS_PER_HOUR) {
            write!(f, "{}h", s / SECS_PER_HOUR)
        } else if s.is_multiple_of(SECS_PER_MINUTE) {
            write!(f, "{}m", s / SECS_PER_MINUTE)
        } else {
            write!(f, "{s}s")
        }
    }
}

impl FromStr for Period {
    type Err = FlowError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason| FlowError::InvalidPeriod {
            value: s.to_owned(),
            reason,
        };
        let (digits, unit) = match s.as_bytes().last() {
            Some(b) if b.is_ascii_digit() => (s, 1),
            Some(b's') => (&s[..s.len() - 1], 1),
            Some(b'm') => (&s[..s.len() - 1], SECS_PER_MINUTE),
            Some(b'h') => (&s[..s.len() - 1], SECS_PER_HOUR),
            Some(b'd') => (&s[..s.len() - 1], SECS_PER_DAY),
            Some(_) => return Err(bad("unknown unit")),
            None => return Err(bad("empty")),
        };
        let n = parse_count(digits).map_err(bad)?;
        let secs = u64::from(n.get()) * u64::from(unit);
        u32::try_from(secs)
            .ok()
            .and_then(Self::from_secs)
            .ok_or_else(|| bad("longer than 7d"))
    }
}

impl Serialize for Period {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(self.0)
    }
}

impl<'de> Deserialize<'de> for Period {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let secs = u32::deserialize(deserializer)?;
        Self::from_secs(secs).ok_or_else(|| {
            serde::de::Error::custom(format!("period of {secs} s is outside 1 s ..= 7 d"))
        })
    }
}

/// A rate limit: at most `max` dispatches per fixed window of `period`.
///
/// # Examples
/// ```
/// use std::num::NonZeroU32;
/// use flowvec::flow::{Period, Rate};
/// let r = Rate { max: NonZeroU32::new(10).unwrap(), period: Period::from_secs(60).unwrap() };
/// assert_eq!(r.period.to_string(), "1m");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rate {
    /// Dispatches allowed per window.
    pub max: NonZeroU32,
    /// The window length.
    pub period: Period,
}

/// The limits a message carries for its key: the `Service-Flow-Control-Value` header.
///
/// A part left out is unlimited. Parsing accepts `parallelism=<int>`, `rate=<int>` and
/// `period=<duration>` in any order and combination, comma-separated, names in any case, optional
/// spaces around `,` and `=`; `period` defaults to 1 s and needs `rate`. `Display` prints the
/// canonical form (`parallelism=5,rate=10,period=1m`), which parses back to the same value.
///
/// # Examples
/// ```
/// use flowvec::flow::Limits;
/// let l: Limits = "Rate = 10, period=60s ,parallelism=5".parse()?;
/// assert_eq!(l.parallelism.map(|p| p.get()), Some(5));
/// assert_eq!(l.rate.map(|r| (r.max.get(), r.period.as_secs())), Some((10, 60)));
/// assert_eq!(l.to_string(), "parallelism=5,rate=10,period=1m");
/// assert_eq!(l.to_string().parse::<Limits>()?, l);
/// # Ok::<(), flowvec::flow::FlowError>(())
/// ```
///
/// # Errors
/// Parsing fails with a [`FlowError`] quoting the offending part for an empty value or part,
/// an unknown or repeated name, a missing `=`, a zero, negative, overflowing or non-integer
/// number, a bad period unit or range, and `period` without `rate`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Limits {
    /// At most this many active calls for the key at once.
    pub parallelism: Option<NonZeroU32>,
    /// At most `max` dispatches per window of `period` for the key.
    pub rate: Option<Rate>,
}

impl Limits {
    /// No limit at all.
    pub const UNLIMITED: Self = Self {
        parallelism: None,
        rate: None,
    };
}

impl fmt::Display for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        if let Some(p) = self.parallelism {
            write!(f, "parallelism={p}")?;
            sep = ",";
        }
        if let Some(r) = self.rate {
            write!(f, "{sep}rate={},period={}", r.max, r.period)?;
        }
        Ok(())
    }
}

impl FromStr for Limits {
    type Err = FlowError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().is_empty() {
            return Err(FlowError::EmptyLimits);
        }
        let mut parallelism = None;
        let mut rate = None;
        let mut period: Option<(Period, &str)> = None;
        for part in s.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(FlowError::EmptyLimitPart {
                    value: s.to_owned(),
                });
            }
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| FlowError::MissingEquals {
                    part: part.to_owned(),
                })?;
            let (name, value) = (name.trim(), value.trim());
            let repeated = || FlowError::RepeatedLimit {
                name: name.to_owned(),
            };
            let number = |v: &str| {
                parse_count(v).map_err(|reason| FlowError::InvalidLimitValue {
                    name: name.to_owned(),
                    value: v.to_owned(),
                    reason,
                })
            };
            if name.eq_ignore_ascii_case("parallelism") {
                if parallelism.replace(number(value)?).is_some() {
                    return Err(repeated());
                }
            } else if name.eq_ignore_ascii_case("rate") {
                if rate.replace(number(value)?).is_some() {
                    return Err(repeated());
                }
            } else if name.eq_ignore_ascii_case("period") {
                if period.replace((value.parse()?, value)).is_some() {
                    return Err(repeated());
                }
            } else {
                return Err(FlowError::UnknownLimit {
                    name: name.to_owned(),
                });
            }
        }
        let rate = match (rate, period) {
            (Some(max), period) => Some(Rate {
                max,
                period: period.map_or_else(Period::default, |p| p.0),
            }),
            (None, Some((_, written))) => {
                return Err(FlowError::PeriodWithoutRate {
                    period: written.to_owned(),
                });
            }
            (None, None) => None,
        };
        Ok(Self { parallelism, rate })
    }
}

/// Parses a decimal integer in `1..=u32::MAX`; the error says what is wrong with it.
fn parse_count(v: &str) -> Result<NonZeroU32, &'static str> {
    let all_digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    if v.strip_prefix('-').is_some_and(all_digits) {
        return Err("negative");
    }
    if !all_digits(v) {
        return Err("not an integer");
    }
    let n: u64 = match v.trim_start_matches('0') {
        "" => 0,
        d if d.len() > 10 => return Err("too large"),
        d => d.parse().map_err(|_| "not an integer")?,
    };
    let n = u32::try_from(n).map_err(|_| "too large")?;
    NonZeroU32::new(n).ok_or("zero is not allowed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_display_uses_the_largest_exact_unit() {
        for (secs, text) in [
            (1, "1s"),
            (59, "59s"),
            (60, "1m"),
            (90, "90s"),
            (3600, "1h"),
            (5400, "90m"),
            (86400, "1d"),
            (604_800, "7d"),
        ] {
            let p = Period::from_secs(secs).unwrap();
            assert_eq!(p.to_string(), text);
            assert_eq!(text.parse::<Period>().unwrap(), p);
        }
        assert_eq!(Period::from_secs(0), None);
        assert_eq!(Period::from_secs(604_801), None);
    }

    #[test]
    fn count_parser_names_the_problem() {
        assert_eq!(parse_count("7").unwrap().get(), 7);
        assert_eq!(parse_count("007").unwrap().get(), 7);
        assert_eq!(parse_count("4294967295").unwrap().get(), u32::MAX);
        assert_eq!(parse_count("0"), Err("zero is not allowed"));
        assert_eq!(parse_count("000"), Err("zero is not allowed"));
        assert_eq!(parse_count("-3"), Err("negative"));
        assert_eq!(parse_count("4294967296"), Err("too large"));
        assert_eq!(parse_count("99999999999999999999999"), Err("too large"));
        for bad in ["", "+", "x", "1.5", "1e3", "- 3", "3 4", "-"] {
            assert_eq!(parse_count(bad), Err("not an integer"), "{bad:?}");
        }
    }
}
