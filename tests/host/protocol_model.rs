//! The claim / settle / evict / reshard protocol between callers and
//! objects, model-checked exhaustively with Stateright (docs/development.md,
//! "The protocol model").
//!
//! Example tests change one thing at a time; the holes of issue 44 live
//! between actors that disagree: a caller whose configuration lags or leads
//! the tenant's registry, an object whose own configuration does, an owner
//! that outlives its lease, an operator's eviction during a reshard. This
//! model is an abstraction of one key of one tenant being resharded from
//! one object (`P`, also the tenant's registry) to a layout whose object
//! for the key is `C`:
//! - each object holds at most one record of the key (state, generation,
//!   the grant's token, whether its lease is live) and a generation floor;
//! - the registry's record is `Unsharded` until the first call reaches `C`
//!   (its layout check has the registry accept the reshard), then
//!   `Resharded`: `P` is the previous layout;
//! - each owner has its own configuration (`View`: unsharded, resharded
//!   with `previous`, or the current layout alone — a separately
//!   configured app) and routes its claim and its settlement by it, as
//!   `TenantLedgers` and the gateway do (previous layout first, on `421`
//!   the current one); `P` and `C` have their own configurations too.
//!   Every configuration starts unsharded and the new one reaches each
//!   owner and `P` by its own deploy, in any order (a lagging or leading
//!   deploy);
//! - an owner's lease may end while it still runs (it stays a late owner);
//!   the operator may evict a record whose lease is not live.
//!
//! Two protocol switches select what is checked:
//! - `settle_by_token`: a settlement is matched by its grant's lease token
//!   (on) or by its generation alone (off: before issue 44);
//! - `object_decides`: whether a key may live in the previous layout is
//!   decided by the registry's record — `C` asks `P` itself for a key it
//!   does not hold unless the call says its caller already did (on) — or
//!   by `C`'s own configuration, trusting the caller to have asked the
//!   previous layout first (off: before). In both, `P` is retired by its
//!   own configuration, which a deploy changes at any moment.
//!
//! Properties: a key never has two live owners; no answer is stored over
//! another owner's grant; a key is never granted while any object still
//! holds its completion (its retention holds). With both switches off the
//! checker finds the counterexamples of issue 44 items 1 and 2 (kept as
//! e2e replays: tests/e2e/late-owner.test.mjs, tests/e2e/skew.test.mjs);
//! with both on it explores every state at these bounds and finds none.

use std::hash::Hash;

use stateright::{Checker, Model, Property};

/// The two objects that can hold the key: the previous layout's (and the
/// registry) and the current layout's.
const P: usize = 0;
const C: usize = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum View {
    /// One object per tenant (no `TENANT_SHARDS` entry).
    Unsharded,
    /// Resharded, naming `previous`: the previous layout first, on 421 the current.
    Resharded,
    /// The current layout alone (`previous` dropped, or never named).
    CurrentOnly,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum St {
    InFlight,
    Completed,
    Released,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Rec {
    state: St,
    generation: u8,
    /// The grant's lease token (a number no other grant has).
    token: u8,
    lease_live: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Owner {
    Idle,
    /// Granted at `object`; `live` until its lease ends (it may still run).
    Running {
        object: usize,
        generation: u8,
        token: u8,
        live: bool,
    },
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    records: [Option<Rec>; 2],
    floors: [u8; 2],
    resharded: bool,
    /// Each owner's configuration, and the one its deploy brings.
    views: Vec<View>,
    targets: Vec<View>,
    /// `P`'s and `C`'s own configurations (`P`'s deploy brings
    /// `Resharded`; `C` exists only in the new layout).
    object_views: [View; 2],
    owners: Vec<Owner>,
    next_token: u8,
    evictions_left: u8,
    /// Ghosts: what the properties read.
    stored_over_another: bool,
    granted_while_completed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Action {
    Claim(usize),
    Complete(usize),
    Release(usize),
    LeaseEnds(usize),
    Evict(usize),
    /// The new configuration reaches an owner (or, `None`, object `P`):
    /// deploys land in any order.
    Deploy(Option<usize>),
}

/// What an object answers a claim or a settlement.
enum Answer {
    Granted {
        generation: u8,
        token: u8,
    },
    Refused,
    /// `421 idempotency-key-moved`: not this object's key.
    Moved,
    Settled,
}

struct ProtocolModel {
    settle_by_token: bool,
    object_decides: bool,
    owners: usize,
    evictions: u8,
}

impl ProtocolModel {
    /// Is `P` retired, answering only for a key it holds? By its own
    /// configuration, in both protocols (as the code decides it: an
    /// object whose name is not of its configured layout's).
    fn retired(&self, s: &State) -> bool {
        s.object_views[P] != View::Unsharded
    }

    /// Does `C` ask `P` first for a call that says `asked` (whether its
    /// caller already asked the previous layout)?
    fn consults(&self, s: &State, asked: bool) -> bool {
        if self.object_decides {
            // The registry's record names a previous layout, the caller did
            // not ask it, and `C` does not hold the key.
            s.resharded && !asked && s.records[C].is_none()
        } else {
            // Only when its own configuration dropped `previous` and the
            // registry keeps it in force; otherwise it trusts the caller.
            s.resharded && s.object_views[C] == View::CurrentOnly && !asked
        }
    }

    /// Where a caller of `view` sends a keyed call: each object in turn,
    /// with whether it already asked the previous layout.
    fn route(view: View) -> &'static [(usize, bool)] {
        match view {
            View::Unsharded => &[(P, false)],
            View::Resharded => &[(P, false), (C, true)],
            View::CurrentOnly => &[(C, false)],
        }
    }

    fn claim_at(&self, s: &mut State, object: usize, asked: bool) -> Answer {
        if object == C {
            // C's layout check: the registry records the reshard first.
            s.resharded = true;
            if self.consults(s, asked) {
                match self.claim_at(s, P, false) {
                    Answer::Moved => {}
                    answer => return answer,
                }
            }
        } else if self.retired(s) && s.records[P].is_none() {
            return Answer::Moved;
        }
        self.claim_local(s, object)
    }

    fn claim_local(&self, s: &mut State, object: usize) -> Answer {
        let generation = match s.records[object] {
            None => s.floors[object] + 1,
            Some(r) => match r.state {
                St::Completed => return Answer::Refused,
                St::InFlight if r.lease_live => return Answer::Refused,
                St::InFlight | St::Released => r.generation + 1,
            },
        };
        if s.records.iter().flatten().any(|r| r.state == St::Completed) {
            s.granted_while_completed = true;
        }
        let token = s.next_token;
        s.next_token += 1;
        s.records[object] = Some(Rec {
            state: St::InFlight,
            generation,
            token,
            lease_live: true,
        });
        Answer::Granted { generation, token }
    }

    fn settle_at(
        &self,
        s: &mut State,
        object: usize,
        (generation, token): (u8, u8),
        to: St,
    ) -> Answer {
        if object == C && self.consults(s, false) {
            match self.settle_at(s, P, (generation, token), to) {
                Answer::Moved => {}
                answer => return answer,
            }
        } else if object == P && self.retired(s) && s.records[P].is_none() {
            return Answer::Moved;
        }
        let Some(r) = s.records[object].as_mut() else {
            return Answer::Refused;
        };
        let named = !self.settle_by_token || r.token == token;
        if r.state != St::InFlight || r.generation != generation || !named {
            return Answer::Refused;
        }
        if to == St::Completed && r.token != token {
            s.stored_over_another = true;
        }
        r.state = to;
        r.lease_live = false;
        Answer::Settled
    }
}

impl Model for ProtocolModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        // Each owner's deploy brings the resharded configuration, or one
        // naming the current layout alone; `C`'s own configuration is one
        // of those too (it matters only when objects do not decide).
        let targets = [View::Resharded, View::CurrentOnly];
        let mut combos: Vec<Vec<View>> = vec![Vec::new()];
        for _ in 0..self.owners {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    targets.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push(*v);
                        c
                    })
                })
                .collect();
        }
        let c_views: &[View] = &targets;
        let mut out = Vec::new();
        for owner_targets in combos {
            for &c_view in c_views {
                out.push(State {
                    records: [None, None],
                    floors: [0, 0],
                    resharded: false,
                    views: vec![View::Unsharded; self.owners],
                    targets: owner_targets.clone(),
                    object_views: [View::Unsharded, c_view],
                    owners: vec![Owner::Idle; self.owners],
                    next_token: 1,
                    evictions_left: self.evictions,
                    stored_over_another: false,
                    granted_while_completed: false,
                });
            }
        }
        out
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        for (i, owner) in s.owners.iter().enumerate() {
            match owner {
                Owner::Idle => actions.push(Action::Claim(i)),
                Owner::Running { live, .. } => {
                    actions.push(Action::Complete(i));
                    actions.push(Action::Release(i));
                    if *live {
                        actions.push(Action::LeaseEnds(i));
                    }
                }
                Owner::Done => {}
            }
        }
        for i in 0..s.owners.len() {
            if s.views[i] != s.targets[i] {
                actions.push(Action::Deploy(Some(i)));
            }
        }
        if s.object_views[P] == View::Unsharded {
            actions.push(Action::Deploy(None));
        }
        if s.evictions_left > 0 {
            for object in [P, C] {
                if s.records[object].is_some_and(|r| !(r.state == St::InFlight && r.lease_live)) {
                    actions.push(Action::Evict(object));
                }
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::Claim(i) => {
                s.owners[i] = Owner::Done;
                for &(object, asked) in Self::route(s.views[i]) {
                    match self.claim_at(&mut s, object, asked) {
                        Answer::Moved => continue,
                        Answer::Granted { generation, token } => {
                            s.owners[i] = Owner::Running {
                                object,
                                generation,
                                token,
                                live: true,
                            };
                        }
                        _ => {}
                    }
                    break;
                }
            }
            Action::Complete(i) | Action::Release(i) => {
                let Owner::Running {
                    generation, token, ..
                } = s.owners[i]
                else {
                    return None;
                };
                let to = if matches!(action, Action::Complete(_)) {
                    St::Completed
                } else {
                    St::Released
                };
                s.owners[i] = Owner::Done;
                // Routed as the owner's own configuration routes it (the
                // JS TenantLedgers way: previous layout first, on 421 the
                // current), not to the object that granted it.
                for &(object, _) in Self::route(s.views[i]) {
                    if !matches!(
                        self.settle_at(&mut s, object, (generation, token), to),
                        Answer::Moved
                    ) {
                        break;
                    }
                }
            }
            Action::LeaseEnds(i) => {
                let Owner::Running {
                    object,
                    token,
                    ref mut live,
                    ..
                } = s.owners[i]
                else {
                    return None;
                };
                *live = false;
                if let Some(r) = s.records[object].as_mut() {
                    if r.token == token && r.state == St::InFlight {
                        r.lease_live = false;
                    }
                }
            }
            Action::Evict(object) => {
                let r = s.records[object].take()?;
                s.floors[object] = s.floors[object].max(r.generation);
                s.evictions_left -= 1;
            }
            Action::Deploy(Some(i)) => s.views[i] = s.targets[i],
            Action::Deploy(None) => s.object_views[P] = View::Resharded,
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("no two live owners", |_, s: &State| {
                s.owners
                    .iter()
                    .filter(|o| matches!(o, Owner::Running { live: true, .. }))
                    .count()
                    <= 1
            }),
            Property::always(
                "no answer stored over another owner's grant",
                |_, s: &State| !s.stored_over_another,
            ),
            Property::always(
                "never granted while a completion is held",
                |_, s: &State| !s.granted_while_completed,
            ),
            Property::sometimes("a key is completed", |_, s: &State| {
                s.records.iter().flatten().any(|r| r.state == St::Completed)
            }),
        ]
    }
}

/// The bounds every run checks at (stated in docs/development.md).
const OWNERS: usize = 3;
const EVICTIONS: u8 = 1;

fn check(settle_by_token: bool, object_decides: bool) -> impl Checker<ProtocolModel> {
    ProtocolModel {
        settle_by_token,
        object_decides,
        owners: OWNERS,
        evictions: EVICTIONS,
    }
    .checker()
    .spawn_bfs()
    .join()
}

/// The counterexample's actions, for a failure message and assertions.
fn counterexample(
    checker: &impl Checker<ProtocolModel>,
    property: &'static str,
) -> Option<Vec<Action>> {
    checker.discovery(property).map(|path| path.into_actions())
}

#[test]
fn the_protocol_before_issue_44_runs_a_key_twice() {
    let old = check(false, false);
    assert!(old.is_done());
    // Item 1: a completion matched by its generation alone, stored over
    // another object's grant of the same generation.
    let stored = counterexample(&old, "no answer stored over another owner's grant")
        .expect("item 1's completion over another grant is found");
    assert!(
        matches!(stored.last(), Some(Action::Complete(_))),
        "{stored:?}"
    );
    // Items 1 and 2: two owners live at once (one object granted where the
    // other held the key).
    let two_live = counterexample(&old, "no two live owners").expect("a second live owner");
    assert!(
        two_live
            .iter()
            .filter(|a| matches!(a, Action::Claim(_)))
            .count()
            >= 2,
        "{two_live:?}"
    );
    // Item 2: a caller or object whose configuration skips the previous
    // layout grants a key the previous layout completed.
    let regranted = counterexample(&old, "never granted while a completion is held")
        .expect("item 2's second run is found");
    assert!(
        regranted.iter().any(|a| matches!(a, Action::Complete(_))),
        "{regranted:?}"
    );
}

#[test]
fn lease_tokens_alone_close_the_late_settlement_but_not_the_skewed_configuration() {
    let tokens = check(true, false);
    assert!(tokens.is_done());
    assert!(
        counterexample(&tokens, "no answer stored over another owner's grant").is_none(),
        "{:?}",
        counterexample(&tokens, "no answer stored over another owner's grant")
    );
    assert!(counterexample(&tokens, "never granted while a completion is held").is_some());
    assert!(counterexample(&tokens, "no two live owners").is_some());
}

#[test]
fn the_protocol_with_lease_tokens_and_the_object_deciding_holds_every_property_exhaustively() {
    let new = check(true, true);
    assert!(new.is_done());
    for property in [
        "no two live owners",
        "no answer stored over another owner's grant",
        "never granted while a completion is held",
    ] {
        assert!(
            counterexample(&new, property).is_none(),
            "{property}: {:?}",
            counterexample(&new, property)
        );
    }
    assert!(
        new.discovery("a key is completed").is_some(),
        "the model reaches a completion"
    );
    // The stated bound (docs/development.md): every state explored.
    let states = new.unique_state_count();
    assert!(states > 50_000, "explored only {states} states");
    println!("protocol model: {states} unique states at {OWNERS} owners, {EVICTIONS} eviction");
}
