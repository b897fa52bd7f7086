//! Random operation sequences against a reference model (DESIGN §1.3), checking after every
//! step: per-key parallelism, rate windows and the global cap at each dispatch; nothing
//! dispatched while paused; FIFO within a key; no message lost or duplicated; work
//! conservation; the engine's key info equals the model's; only reclaimable keys are
//! reclaimed; and snapshot/restore mid-sequence: the restored engine continues exactly like
//! the original with its active calls requeued.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::num::NonZeroU32;
use std::time::Duration;

use flowvec::flow::{
    FlowConfig, FlowControl, FlowSnapshot, KeyInfo, Limits, MessageId, Period, Pin, Rate,
    Timestamp, Unpin,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

const KEYS: [&str; 4] = ["a", "b", "c", "d"];
const TTL_MS: u64 = 2_000;
const T0: u64 = 1_700_000_000_000;

#[derive(Debug, Clone)]
enum Op {
    Publish {
        key: Option<u8>,
        parallelism: Option<u8>,
        rate: Option<(u8, u8)>,
    },
    PublishKeyWithoutLimits(u8),
    PublishLimitsWithoutKey,
    Poll,
    Drain,
    Complete(usize),
    CompleteWaiting(usize),
    Requeue(usize),
    Cancel(usize),
    CancelActive(usize),
    Advance(u16),
    Pause(u8),
    Resume(u8),
    Pin {
        key: u8,
        parallelism: Option<u8>,
        rate: Option<u8>,
        period: Option<u8>,
    },
    Unpin {
        key: u8,
        parallelism: bool,
        rate: bool,
    },
    ResetRate(u8),
    Snapshot,
}

fn arb_op() -> impl Strategy<Value = Op> {
    let key = 0u8..4;
    prop_oneof![
        8 => (proptest::option::weighted(0.85, key.clone()), proptest::option::of(1u8..4), proptest::option::of((1u8..4, 1u8..4)))
            .prop_map(|(key, parallelism, rate)| Op::Publish { key, parallelism, rate }),
        1 => key.clone().prop_map(Op::PublishKeyWithoutLimits),
        1 => Just(Op::PublishLimitsWithoutKey),
        6 => Just(Op::Poll),
        2 => Just(Op::Drain),
        5 => any::<usize>().prop_map(Op::Complete),
        1 => any::<usize>().prop_map(Op::CompleteWaiting),
        2 => any::<usize>().prop_map(Op::Requeue),
        1 => any::<usize>().prop_map(Op::Cancel),
        1 => any::<usize>().prop_map(Op::CancelActive),
        4 => (0u16..3_000).prop_map(Op::Advance),
        1 => key.clone().prop_map(Op::Pause),
        1 => key.clone().prop_map(Op::Resume),
        1 => (key.clone(), proptest::option::of(1u8..4), proptest::option::of(1u8..4), proptest::option::of(1u8..4))
            .prop_map(|(key, parallelism, rate, period)| Op::Pin { key, parallelism, rate, period }),
        1 => (key.clone(), any::<bool>(), any::<bool>()).prop_map(|(key, parallelism, rate)| Op::Unpin { key, parallelism, rate }),
        1 => key.prop_map(Op::ResetRate),
        1 => Just(Op::Snapshot),
    ]
}

/// A concrete call, the same for the engine and its twin.
#[derive(Debug, Clone)]
enum Cmd {
    Publish(Option<&'static str>, Option<Limits>, u32),
    Poll,
    Complete(MessageId),
    Requeue(MessageId),
    Cancel(MessageId),
    Advance,
    Pause(&'static str),
    Resume(&'static str),
    Pin(&'static str, Pin),
    Unpin(&'static str, Unpin),
    ResetRate(&'static str),
    PollTimeout,
}

/// What a call returned, comparable between the engine and its twin.
type Outcome = String;

fn exec(fc: &mut FlowControl<u32>, cmd: &Cmd, now: Timestamp) -> Outcome {
    match cmd {
        Cmd::Publish(k, l, m) => format!("{:?}", fc.publish(*k, *l, *m, now)),
        Cmd::Poll => format!("{:?}", fc.poll_dispatch(now)),
        Cmd::Complete(id) => format!("{:?}", fc.complete(*id, now)),
        Cmd::Requeue(id) => format!("{:?}", fc.requeue(*id, now)),
        Cmd::Cancel(id) => format!("{:?}", fc.cancel(*id)),
        Cmd::Advance => format!("{:?}", fc.handle_timeout(now)),
        Cmd::Pause(k) => format!("{:?}", fc.pause(k, now)),
        Cmd::Resume(k) => format!("{:?}", fc.resume(k, now)),
        Cmd::Pin(k, p) => format!("{:?}", fc.pin(k, *p, now)),
        Cmd::Unpin(k, u) => format!("{:?}", fc.unpin(k, *u, now)),
        Cmd::ResetRate(k) => format!("{:?}", fc.reset_rate(k, now)),
        Cmd::PollTimeout => format!("{:?}", fc.poll_timeout()),
    }
}

#[derive(Debug, Clone)]
struct MKey {
    parallelism: Option<u32>,
    rate: Option<u32>,
    period_s: u32,
    window_start: u64,
    window_count: u32,
    paused: bool,
    pin_par: bool,
    pin_rate: bool,
    waiting: VecDeque<MessageId>,
    active: u32,
    idle_since: Option<u64>,
}

impl Default for MKey {
    /// A fresh key: unlimited, period 1 s.
    fn default() -> Self {
        Self {
            parallelism: None,
            rate: None,
            period_s: 1,
            window_start: 0,
            window_count: 0,
            paused: false,
            pin_par: false,
            pin_rate: false,
            waiting: VecDeque::new(),
            active: 0,
            idle_since: None,
        }
    }
}

impl MKey {
    fn window_open(&self, now: u64) -> bool {
        self.window_count > 0 && now < self.window_start + u64::from(self.period_s) * 1000
    }
    fn count_at(&self, now: u64) -> u32 {
        if self.window_open(now) {
            self.window_count
        } else {
            0
        }
    }
    fn eligible(&self, now: u64) -> bool {
        !self.waiting.is_empty()
            && !self.paused
            && self.parallelism.is_none_or(|p| self.active < p)
            && self.rate.is_none_or(|r| self.count_at(now) < r)
    }
    fn reclaimable(&self) -> bool {
        self.waiting.is_empty()
            && self.active == 0
            && !self.paused
            && !self.pin_par
            && !self.pin_rate
    }
    fn info(&self, name: &str, now: u64) -> KeyInfo {
        KeyInfo {
            flow_control_key: name.to_owned(),
            wait_list_size: self.waiting.len() as u64,
            parallelism_max: self.parallelism,
            parallelism_count: self.active,
            rate_max: self.rate,
            rate_count: self.count_at(now),
            rate_period: self.period_s,
            rate_period_start: self.window_start / 1000,
            is_paused: self.paused,
            is_pinned_parallelism: self.pin_par,
            is_pinned_rate: self.pin_rate,
        }
    }
}

/// The reference model. Key `None` is the unkeyed pseudo-key.
struct Model {
    now: u64,
    global: Option<u32>,
    keys: BTreeMap<Option<&'static str>, MKey>,
    /// Every live message: key and payload; `true` when active.
    messages: HashMap<MessageId, (Option<&'static str>, u32, bool)>,
    published: u64,
    completed: u64,
    cancelled: u64,
    next_payload: u32,
}

impl Model {
    fn active_total(&self) -> u32 {
        self.keys.values().map(|k| k.active).sum()
    }
    fn can_dispatch(&self) -> bool {
        self.global.is_none_or(|g| self.active_total() < g)
            && self.keys.values().any(|k| k.eligible(self.now))
    }
    fn sorted(&self, active: bool) -> Vec<MessageId> {
        let mut v: Vec<MessageId> = self
            .messages
            .iter()
            .filter(|(_, m)| m.2 == active)
            .map(|(id, _)| *id)
            .collect();
        v.sort();
        v
    }
    fn key_mut(&mut self, k: &'static str) -> &mut MKey {
        self.keys.entry(Some(k)).or_default()
    }
}

fn nz(n: u8) -> NonZeroU32 {
    NonZeroU32::new(u32::from(n)).unwrap()
}

struct Harness {
    fc: FlowControl<u32>,
    /// After a snapshot: the original engine with its active calls requeued, run in lockstep.
    twin: Option<FlowControl<u32>>,
    model: Model,
}

impl Harness {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(self.model.now)
    }

    fn run(&mut self, cmd: &Cmd) -> Outcome {
        let now = self.now();
        let out = exec(&mut self.fc, cmd, now);
        if let Some(twin) = &mut self.twin {
            assert_eq!(
                exec(twin, cmd, now),
                out,
                "restored engine diverged from the original at {cmd:?}"
            );
        }
        out
    }

    fn step(&mut self, op: &Op) {
        let m = &mut self.model;
        let now = m.now;
        match op {
            Op::Publish {
                key,
                parallelism,
                rate,
            } => {
                let key = key.map(|k| KEYS[k as usize]);
                let limits = key.map(|_| Limits {
                    parallelism: parallelism.map(nz),
                    rate: rate.map(|(r, p)| Rate {
                        max: nz(r),
                        period: Period::from_secs(u32::from(p)).unwrap(),
                    }),
                });
                let payload = m.next_payload;
                m.next_payload += 1;
                let out = self.run(&Cmd::Publish(key, limits, payload));
                let m = &mut self.model;
                assert!(out.starts_with("Ok(MessageId"), "publish failed: {out}");
                let id = parse_id(&out);
                let k = m.keys.entry(key).or_default();
                if let Some(l) = limits {
                    if !k.pin_par {
                        k.parallelism = l.parallelism.map(NonZeroU32::get);
                    }
                    if !k.pin_rate {
                        k.rate = l.rate.map(|r| r.max.get());
                        k.period_s = l.rate.map_or(1, |r| r.period.as_secs());
                    }
                }
                k.waiting.push_back(id);
                m.messages.insert(id, (key, payload, false));
                m.published += 1;
            }
            Op::PublishKeyWithoutLimits(k) => {
                let out = self.run(&Cmd::Publish(Some(KEYS[*k as usize]), None, 0));
                assert!(out.starts_with("Err(MissingLimits"), "{out}");
            }
            Op::PublishLimitsWithoutKey => {
                let out = self.run(&Cmd::Publish(None, Some("rate=1".parse().unwrap()), 0));
                assert!(out.starts_with("Err(LimitsWithoutKey"), "{out}");
            }
            Op::Poll => {
                self.poll();
            }
            Op::Drain => {
                while self.poll() {}
                assert!(
                    !self.model.can_dispatch(),
                    "drained but the model says a message could go"
                );
            }
            Op::Complete(i) | Op::Requeue(i) => {
                let active = m.sorted(true);
                if active.is_empty() {
                    return;
                }
                let id = active[*i % active.len()];
                let complete = matches!(op, Op::Complete(_));
                let out = self.run(&if complete {
                    Cmd::Complete(id)
                } else {
                    Cmd::Requeue(id)
                });
                let m = &mut self.model;
                let (key, payload, _) = m.messages[&id];
                let k = m.keys.get_mut(&key).unwrap();
                k.active -= 1;
                if complete {
                    assert_eq!(out, format!("Ok({payload})"));
                    m.messages.remove(&id);
                    m.completed += 1;
                } else {
                    assert_eq!(out, "Ok(())");
                    k.waiting.push_front(id);
                    m.messages.get_mut(&id).unwrap().2 = false;
                }
            }
            Op::CompleteWaiting(i) => {
                let waiting = m.sorted(false);
                if waiting.is_empty() {
                    return;
                }
                let id = waiting[*i % waiting.len()];
                let out = self.run(&Cmd::Complete(id));
                assert!(out.starts_with("Err(NotActive"), "{out}");
                let out = self.run(&Cmd::Requeue(id));
                assert!(out.starts_with("Err(NotActive"), "{out}");
            }
            Op::Cancel(i) | Op::CancelActive(i) => {
                let active = matches!(op, Op::CancelActive(_));
                let ids = m.sorted(active);
                if ids.is_empty() {
                    return;
                }
                let id = ids[*i % ids.len()];
                let out = self.run(&Cmd::Cancel(id));
                let m = &mut self.model;
                if active {
                    assert_eq!(out, "None", "an active call is not cancelled");
                } else {
                    let (key, payload, _) = m.messages.remove(&id).unwrap();
                    assert_eq!(out, format!("Some({payload})"));
                    m.keys.get_mut(&key).unwrap().waiting.retain(|w| *w != id);
                    m.cancelled += 1;
                }
            }
            Op::Advance(ms) => {
                m.now += u64::from(*ms);
                self.run(&Cmd::Advance);
            }
            Op::Pause(k) => {
                let k = KEYS[*k as usize];
                assert_eq!(self.run(&Cmd::Pause(k)), "Ok(())");
                self.model.key_mut(k).paused = true;
            }
            Op::Resume(k) | Op::ResetRate(k) => {
                let k = KEYS[*k as usize];
                let resume = matches!(op, Op::Resume(_));
                let out = self.run(&if resume {
                    Cmd::Resume(k)
                } else {
                    Cmd::ResetRate(k)
                });
                match self.model.keys.get_mut(&Some(k)) {
                    None => assert!(out.starts_with("Err(UnknownKey"), "{out}"),
                    Some(mk) => {
                        assert_eq!(out, "Ok(())");
                        if resume {
                            mk.paused = false;
                        } else {
                            mk.window_count = 0;
                        }
                    }
                }
            }
            Op::Pin {
                key,
                parallelism,
                rate,
                period,
            } => {
                let k = KEYS[*key as usize];
                let pin = Pin {
                    parallelism: parallelism.map(nz),
                    rate: rate.map(nz),
                    period: period.map(|p| Period::from_secs(u32::from(p)).unwrap()),
                };
                let out = self.run(&Cmd::Pin(k, pin));
                let has_rate = self
                    .model
                    .keys
                    .get(&Some(k))
                    .is_some_and(|mk| mk.rate.is_some());
                if pin == Pin::default() {
                    assert!(out.starts_with("Err(EmptyPin"), "{out}");
                } else if pin.rate.is_none() && pin.period.is_some() && !has_rate {
                    assert!(out.starts_with("Err(PeriodWithoutRate"), "{out}");
                } else {
                    assert_eq!(out, "Ok(())");
                    let mk = self.model.key_mut(k);
                    if let Some(p) = pin.parallelism {
                        mk.parallelism = Some(p.get());
                        mk.pin_par = true;
                    }
                    if pin.rate.is_some() || pin.period.is_some() {
                        if let Some(r) = pin.rate {
                            if mk.rate.is_none() {
                                mk.period_s = 1;
                            }
                            mk.rate = Some(r.get());
                        }
                        if let Some(p) = pin.period {
                            mk.period_s = p.as_secs();
                        }
                        mk.window_count = 0;
                        mk.pin_rate = true;
                    }
                }
            }
            Op::Unpin {
                key,
                parallelism,
                rate,
            } => {
                let k = KEYS[*key as usize];
                let out = self.run(&Cmd::Unpin(
                    k,
                    Unpin {
                        parallelism: *parallelism,
                        rate: *rate,
                    },
                ));
                assert_eq!(out, "Ok(())");
                let mk = self.model.key_mut(k);
                mk.pin_par &= !parallelism;
                mk.pin_rate &= !rate;
            }
            Op::Snapshot => self.snapshot_restore(),
        }
        let _ = now;
        self.check();
    }

    /// One `poll_dispatch`, checked against the model; returns whether it dispatched.
    fn poll(&mut self) -> bool {
        let could = self.model.can_dispatch();
        let out = self.run(&Cmd::Poll);
        let m = &mut self.model;
        if out == "None" {
            assert!(
                !could,
                "work conservation: a message could go but poll_dispatch returned None"
            );
            return false;
        }
        assert!(
            could,
            "dispatched although the model says nothing may go: {out}"
        );
        let id = parse_id(&out);
        let (key, payload, _) = m.messages[&id];
        assert!(out.contains(&format!("message: {payload} ")), "{out}");
        let now = m.now;
        let global = m.global;
        let total = m.active_total();
        let k = m.keys.get_mut(&key).unwrap();
        assert!(!k.paused, "dispatched from a paused key");
        assert!(
            k.eligible(now),
            "dispatched from a key over its limits: {k:?}"
        );
        assert_eq!(k.waiting.pop_front(), Some(id), "FIFO within the key");
        k.active += 1;
        if let Some(p) = k.parallelism {
            assert!(k.active <= p);
        }
        if let Some(r) = k.rate {
            if !k.window_open(now) {
                k.window_start = now;
                k.window_count = 0;
            }
            k.window_count += 1;
            assert!(k.window_count <= r, "rate window over its maximum");
        }
        assert!(global.is_none_or(|g| total < g), "global cap exceeded");
        m.messages.get_mut(&id).unwrap().2 = true;
        true
    }

    fn snapshot_restore(&mut self) {
        let now = self.now();
        let snap = self.fc.snapshot();
        let json = serde_json::to_string(&snap).unwrap();
        let back: FlowSnapshot<u32> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, snap, "snapshot survives JSON");
        let restored = FlowControl::restore(back, now).unwrap();
        // The reference: the original engine with every active call requeued, latest first.
        let mut original = std::mem::replace(&mut self.fc, restored);
        original.handle_timeout(now);
        if let Some(twin) = &mut self.twin {
            twin.handle_timeout(now);
        }
        let mut active = self.model.sorted(true);
        active.sort_by(|a, b| b.cmp(a));
        for id in &active {
            original.requeue(*id, now).unwrap();
            if let Some(twin) = &mut self.twin {
                twin.requeue(*id, now).unwrap();
            }
            let (key, _, _) = self.model.messages[id];
            let k = self.model.keys.get_mut(&key).unwrap();
            k.active -= 1;
            k.waiting.push_front(*id);
            self.model.messages.get_mut(id).unwrap().2 = false;
        }
        assert_eq!(
            self.fc.snapshot(),
            original.snapshot(),
            "restore == requeue of the active calls"
        );
        if let Some(twin) = &self.twin {
            assert_eq!(twin.snapshot(), original.snapshot(), "twin in lockstep");
        }
        self.twin = Some(original);
    }

    fn check(&mut self) {
        let now = self.model.now;
        let t = self.now();
        // Reclamation: only reclaimable keys disappear, never before their ttl and window.
        let names: Vec<&'static str> = self.model.keys.keys().filter_map(|k| *k).collect();
        for name in names {
            let mk = &self.model.keys[&Some(name)];
            match self.fc.key_info(name, t) {
                Some(info) => assert_eq!(
                    info,
                    mk.info(name, now),
                    "key {name} differs from the model"
                ),
                None => {
                    assert!(
                        mk.reclaimable(),
                        "key {name} reclaimed while in use: {mk:?}"
                    );
                    assert_eq!(
                        mk.count_at(now),
                        0,
                        "key {name} reclaimed inside its rate window"
                    );
                    let since = mk.idle_since.expect("a reclaimable key has an idle time");
                    assert!(now >= since + TTL_MS, "key {name} reclaimed before its ttl");
                    self.model.keys.remove(&Some(name));
                }
            }
        }
        for mk in self.model.keys.values_mut() {
            if mk.reclaimable() {
                mk.idle_since.get_or_insert(now);
            } else {
                mk.idle_since = None;
            }
        }
        let m = &self.model;
        assert_eq!(
            self.fc.keys(t).len(),
            m.keys.keys().filter(|k| k.is_some()).count()
        );
        let active = m.active_total();
        let waiting: usize = m.keys.values().map(|k| k.waiting.len()).sum();
        assert_eq!(self.fc.global_info().parallelism_count, active);
        assert_eq!(self.fc.active_count(), active as usize);
        assert_eq!(self.fc.waiting_count(), waiting);
        assert_eq!(
            m.published,
            m.completed + m.cancelled + u64::from(active) + waiting as u64,
            "no message lost or duplicated"
        );
        assert_eq!(m.messages.len(), active as usize + waiting);
        // Timers: a key held back only by its window wakes the host no later than its end.
        let earliest = m
            .keys
            .values()
            .filter(|k| {
                !k.waiting.is_empty()
                    && !k.paused
                    && k.parallelism.is_none_or(|p| k.active < p)
                    && k.rate.is_some_and(|r| k.count_at(now) >= r)
            })
            .map(|k| k.window_start + u64::from(k.period_s) * 1000)
            .min();
        let timeout = self.run(&Cmd::PollTimeout);
        if let Some(end) = earliest {
            let got = timeout
                .strip_prefix("Some(Timestamp(")
                .and_then(|s| s.strip_suffix("))"))
                .map(|s| s.parse::<u64>().unwrap());
            assert!(
                got.is_some_and(|g| g <= end),
                "poll_timeout {timeout} later than a window end {end}"
            );
        }
    }
}

fn parse_id(out: &str) -> MessageId {
    let seq = out
        .split("seq: ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap();
    let slot = out
        .split("slot: ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap();
    format!("{seq}-{slot}").parse().unwrap()
}

fn run_sequence(global: Option<u8>, ops: &[Op]) {
    let config = FlowConfig {
        global_parallelism: global.map(nz),
        idle_key_ttl: Duration::from_millis(TTL_MS),
    };
    let mut h = Harness {
        fc: FlowControl::new(config),
        twin: None,
        model: Model {
            now: T0,
            global: global.map(u32::from),
            keys: BTreeMap::from([(None, MKey::default())]),
            messages: HashMap::new(),
            published: 0,
            completed: 0,
            cancelled: 0,
            next_payload: 0,
        },
    };
    for op in ops {
        h.step(op);
    }
    if let Some(twin) = &h.twin {
        assert_eq!(
            twin.snapshot(),
            h.fc.snapshot(),
            "restore-then-continue == continue"
        );
    }
    // Wind down: free every key; after the longest window and the ttl, nothing is held.
    for k in KEYS {
        if h.model.keys.contains_key(&Some(k)) {
            h.step(&Op::Resume(KEYS.iter().position(|x| *x == k).unwrap() as u8));
        }
    }
    for i in 0..KEYS.len() as u8 {
        h.step(&Op::Unpin {
            key: i,
            parallelism: true,
            rate: true,
        });
    }
    while !h.model.messages.is_empty() {
        h.step(&Op::Drain);
        h.step(&Op::Cancel(0));
        h.step(&Op::Complete(0));
        h.step(&Op::Advance(2_999));
    }
    h.model.now += 10_000;
    h.run(&Cmd::Advance);
    h.check();
    assert_eq!(h.fc.key_count(), 0, "all keys reclaimed once idle");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_operation_sequences_keep_every_invariant(
        global in proptest::option::of(1u8..6),
        ops in proptest::collection::vec(arb_op(), 1..200),
    ) {
        run_sequence(global, &ops);
    }
}
