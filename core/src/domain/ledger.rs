//! The double-entry ledger: how a money movement becomes balanced postings.
//!
//! Design note. Every bank account carries four running balances (`available`, `pending`,
//! `holding`, `locked`); `ledger_postings` holds one signed row per balance change, and the rows
//! of one journal entry sum to zero. Money enters and leaves a platform only through its
//! `NETWORK_SETTLEMENT_ACCOUNT` (which goes negative as money arrives), so the sum of every
//! balance of every account of a platform is always zero.
//!
//! Options considered:
//! - **Balances derived from postings only** (`SUM` over the postings at read time): one source
//!   of truth, but every read and every funds check scans history, and a funds check still needs
//!   a lock to be race-free. Rejected.
//! - **Conditional updates without reading** (`UPDATE ... SET available = available - ? WHERE
//!   available >= ?`): no explicit lock, but the overdraft rules (shortfall locked on a reserve,
//!   repaid first on the way back) span several rows and several balances, and the caller could
//!   not tell "insufficient funds" from "closed" without a second read. Rejected as the primary
//!   mechanism; the updates are still written as deltas, so even a missed lock could not lose an
//!   update (and the table's CHECKs still stop a forbidden negative balance).
//! - **Chosen: lock, compute in memory, write.** The store locks every involved account row
//!   (`SELECT ... ORDER BY id FOR NO KEY UPDATE` on PostgreSQL; SQLite's single `BEGIN
//!   IMMEDIATE` writer already serialises writers) in one global order: the ordinary accounts
//!   (parties, the settlement account) by ascending id, then the overdraft reserves by ascending
//!   id, since a reserve is known only once its overdraftable account is read
//!   ([`crate::store::ledger::lock_accounts`]). With one order for everyone, two movements can
//!   never deadlock on each other. A [`Journal`] then applies the movement to in-memory copies
//!   with checked arithmetic and the business rules below, and yields the [`Entry`]: per-account
//!   deltas and postings that the store writes in the same transaction as the transfer record.
//!   Any failure rolls back all of it; retryable database errors re-run the whole transaction
//!   (`Db::write`).
//!
//! Rules the journal enforces:
//! - A debit of `available` may not leave it negative ([`DebitPolicy::NoOverdraft`]), except on
//!   an overdraftable account allowed to overdraw ([`DebitPolicy::OverdraftIfAllowed`]): the
//!   part of the debit that takes it below zero (the new shortfall) moves on its overdraft
//!   reserve from `available` to `locked`, and the reserve must have it available. The settlement
//!   account is unbounded ([`DebitPolicy::Unbounded`]): it stands for the outside world.
//! - A credit of `available` to an overdrawn account repays the shortfall first: that much moves
//!   back on the reserve from `locked` to `available`, before the account rises above zero.
//! - So on every reserve, `locked` is the sum of the shortfalls of the accounts it covers.
//!
//! Postings are one row per changed (account, balance) and journal entry, with the net signed
//! amount; zero nets are not written (the table forbids them).

use std::collections::BTreeMap;

use crate::model::ids::BankAccountId;
use crate::model::ledger::{BalanceKind, Entry, LedgerAccount, Posting};

/// How far a debit of `available` may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebitPolicy {
    /// Never below zero.
    NoOverdraft,
    /// Below zero only for an overdraftable account whose reserve covers the shortfall.
    OverdraftIfAllowed,
    /// Without bound: the settlement account, which stands for the outside world.
    Unbounded,
}

/// Why a movement cannot be journaled. HTTP-agnostic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    #[error("insufficient funds")]
    InsufficientFunds,
    /// A balance would leave the `i64` range: the amount is absurdly large for these accounts.
    #[error("the amount would overflow a balance")]
    Overflow,
    /// The caller did not load (lock) an account the movement needs: a bug, not client input.
    #[error("account {0} is not part of this journal entry")]
    AccountNotLoaded(String),
    /// A ledger invariant does not hold (a bug or a corrupted row).
    #[error("ledger invariant broken: {0}")]
    Inconsistent(String),
}

/// A movement being built over locked accounts.
#[derive(Debug, Clone)]
pub struct Journal {
    accounts: BTreeMap<BankAccountId, LedgerAccount>,
    nets: BTreeMap<(BankAccountId, BalanceKind), i64>,
}

impl Journal {
    /// A journal over `accounts` (locked by the caller for the rest of the transaction).
    pub fn new(accounts: impl IntoIterator<Item = LedgerAccount>) -> Journal {
        Journal {
            accounts: accounts.into_iter().map(|a| (a.id.clone(), a)).collect(),
            nets: BTreeMap::new(),
        }
    }

    /// The current (in-memory) state of a loaded account.
    pub fn account(&self, id: &BankAccountId) -> Result<&LedgerAccount, LedgerError> {
        self.accounts
            .get(id)
            .ok_or_else(|| LedgerError::AccountNotLoaded(id.as_str().to_owned()))
    }

    /// Changes one balance by `amount` (signed), with checked arithmetic.
    fn post(
        &mut self,
        id: &BankAccountId,
        kind: BalanceKind,
        amount: i64,
    ) -> Result<(), LedgerError> {
        let account = self
            .accounts
            .get_mut(id)
            .ok_or_else(|| LedgerError::AccountNotLoaded(id.as_str().to_owned()))?;
        let balance = account.balances.get_mut(kind);
        *balance = balance.checked_add(amount).ok_or(LedgerError::Overflow)?;
        let net = self.nets.entry((id.clone(), kind)).or_insert(0);
        *net = net.checked_add(amount).ok_or(LedgerError::Overflow)?;
        Ok(())
    }

    /// Takes `amount` out of `available`, obeying `policy` (see the module note).
    pub fn debit_available(
        &mut self,
        id: &BankAccountId,
        amount: i64,
        policy: DebitPolicy,
    ) -> Result<(), LedgerError> {
        positive(amount)?;
        let account = self.account(id)?.clone();
        let before = account.balances.available;
        let after = before.checked_sub(amount).ok_or(LedgerError::Overflow)?;
        if after < 0 {
            match policy {
                DebitPolicy::Unbounded => {}
                DebitPolicy::NoOverdraft => return Err(LedgerError::InsufficientFunds),
                DebitPolicy::OverdraftIfAllowed => {
                    if !account.is_overdraftable {
                        return Err(LedgerError::InsufficientFunds);
                    }
                    let added = shortfall(after)?
                        .checked_sub(shortfall(before)?)
                        .ok_or(LedgerError::Overflow)?;
                    self.lock_on_reserve(&account, added)?;
                }
            }
        }
        self.post(id, BalanceKind::Available, -amount)
    }

    /// Locks a new shortfall of `account` on its overdraft reserve.
    fn lock_on_reserve(
        &mut self,
        account: &LedgerAccount,
        shortfall: i64,
    ) -> Result<(), LedgerError> {
        if shortfall == 0 {
            return Ok(());
        }
        let Some(reserve_id) = account.overdraft_reserve_account_id.clone() else {
            return Err(LedgerError::Inconsistent(format!(
                "overdraftable account {} has no overdraft reserve",
                account.id
            )));
        };
        let reserve = self.account(&reserve_id)?;
        // An account cannot cover its own shortfall, and a reserve that takes no money movements
        // cannot lock any: both are plainly "not enough funds to overdraw".
        if reserve_id == account.id || !reserve.is_open() || reserve.balances.available < shortfall
        {
            return Err(LedgerError::InsufficientFunds);
        }
        self.post(&reserve_id, BalanceKind::Available, -shortfall)?;
        self.post(&reserve_id, BalanceKind::Locked, shortfall)
    }

    /// Adds `amount` to `available`, repaying an overdraft shortfall first (see the module note).
    pub fn credit_available(&mut self, id: &BankAccountId, amount: i64) -> Result<(), LedgerError> {
        positive(amount)?;
        let account = self.account(id)?.clone();
        self.post(id, BalanceKind::Available, amount)?;
        let before = account.balances.available;
        if before >= 0 || !account.is_overdraftable || account.is_settlement() {
            return Ok(());
        }
        let repaid = amount.min(shortfall(before)?);
        let Some(reserve_id) = account.overdraft_reserve_account_id else {
            return Err(LedgerError::Inconsistent(format!(
                "overdrawn account {id} has no overdraft reserve"
            )));
        };
        let locked = self.account(&reserve_id)?.balances.locked;
        // `locked` on the reserve is the sum of the shortfalls it covers, so it is at least this
        // account's. Should that ever not hold, release what there is rather than refuse every
        // deposit to the account: the entry stays balanced either way.
        let released = repaid.min(locked.max(0));
        if released < repaid {
            tracing::warn!(
                account = %id,
                reserve = %reserve_id,
                repaid,
                locked,
                "overdraft reserve holds less locked money than the shortfall it covers"
            );
        }
        if released > 0 {
            self.post(&reserve_id, BalanceKind::Locked, -released)?;
            self.post(&reserve_id, BalanceKind::Available, released)?;
        }
        Ok(())
    }

    /// Moves `amount` from `from`'s available to `to`'s available.
    pub fn transfer(
        &mut self,
        from: &BankAccountId,
        to: &BankAccountId,
        amount: i64,
        policy: DebitPolicy,
    ) -> Result<(), LedgerError> {
        self.debit_available(from, amount, policy)?;
        self.credit_available(to, amount)
    }

    /// Moves `amount` of `id` from available to holding (a transfer on hold).
    pub fn hold(
        &mut self,
        id: &BankAccountId,
        amount: i64,
        policy: DebitPolicy,
    ) -> Result<(), LedgerError> {
        self.debit_available(id, amount, policy)?;
        self.post(id, BalanceKind::Holding, amount)
    }

    /// Takes `amount` out of `id`'s holding; the caller credits it somewhere in the same entry.
    pub fn release_hold(&mut self, id: &BankAccountId, amount: i64) -> Result<(), LedgerError> {
        positive(amount)?;
        if self.account(id)?.balances.holding < amount {
            return Err(LedgerError::Inconsistent(format!(
                "account {id} holds less than the {amount} being released"
            )));
        }
        self.post(id, BalanceKind::Holding, -amount)
    }

    /// Checks the entry balances and every changed account is valid at rest, and answers it.
    pub fn finish(self) -> Result<Entry, LedgerError> {
        let total: i128 = self.nets.values().map(|&v| i128::from(v)).sum();
        if total != 0 {
            return Err(LedgerError::Inconsistent(format!(
                "journal entry does not balance (off by {total})"
            )));
        }
        let postings: Vec<Posting> = self
            .nets
            .iter()
            .filter(|(_, amount)| **amount != 0)
            .map(|((id, kind), amount)| Posting {
                bank_account_id: id.clone(),
                balance: *kind,
                amount: *amount,
            })
            .collect();
        let mut accounts: Vec<LedgerAccount> = Vec::new();
        for posting in &postings {
            if accounts
                .last()
                .is_some_and(|a| a.id == posting.bank_account_id)
            {
                continue;
            }
            let account = self.accounts.get(&posting.bank_account_id).ok_or_else(|| {
                LedgerError::AccountNotLoaded(posting.bank_account_id.to_string())
            })?;
            let b = account.balances;
            if b.pending < 0
                || b.holding < 0
                || b.locked < 0
                || (b.available < 0 && !account.may_be_negative())
            {
                return Err(LedgerError::Inconsistent(format!(
                    "account {} would end with invalid balances {b:?}",
                    account.id
                )));
            }
            accounts.push(account.clone());
        }
        Ok(Entry { postings, accounts })
    }
}

fn positive(amount: i64) -> Result<(), LedgerError> {
    if amount > 0 {
        Ok(())
    } else {
        Err(LedgerError::Inconsistent(format!(
            "non-positive movement {amount}"
        )))
    }
}

/// How far below zero a balance is (0 when it is not).
fn shortfall(available: i64) -> Result<i64, LedgerError> {
    if available >= 0 {
        Ok(0)
    } else {
        available.checked_neg().ok_or(LedgerError::Overflow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ledger::{AccountStatus, AccountType, Balances};
    use chrono::Utc;

    fn account(kind: AccountType, available: i64) -> LedgerAccount {
        LedgerAccount {
            id: BankAccountId::generate(Utc::now()),
            account_type: kind,
            status: AccountStatus::Open,
            currency_code: "USD".to_owned(),
            balances: Balances {
                available,
                ..Balances::default()
            },
            is_overdraftable: false,
            overdraft_reserve_account_id: None,
        }
    }

    /// A checking account overdraftable on a reserve with `reserve_available`.
    fn overdraftable(available: i64, reserve_available: i64) -> (LedgerAccount, LedgerAccount) {
        let reserve = account(AccountType::OverdraftReserve, reserve_available);
        let mut a = account(AccountType::Checking, available);
        a.is_overdraftable = true;
        a.overdraft_reserve_account_id = Some(reserve.id.clone());
        (a, reserve)
    }

    fn balances(entry: &Entry, id: &BankAccountId) -> Balances {
        entry
            .accounts
            .iter()
            .find(|a| &a.id == id)
            .map(|a| a.balances)
            .expect("account changed")
    }

    fn posting_sum(entry: &Entry) -> i128 {
        entry.postings.iter().map(|p| i128::from(p.amount)).sum()
    }

    #[test]
    fn a_plain_transfer_posts_two_balanced_legs() {
        let (s, r) = (
            account(AccountType::Checking, 100),
            account(AccountType::Checking, 5),
        );
        let mut j = Journal::new([s.clone(), r.clone()]);
        j.transfer(&s.id, &r.id, 60, DebitPolicy::NoOverdraft)
            .expect("funds");
        let entry = j.finish().expect("balanced");
        assert_eq!(entry.postings.len(), 2);
        assert_eq!(posting_sum(&entry), 0);
        assert_eq!(balances(&entry, &s.id).available, 40);
        assert_eq!(balances(&entry, &r.id).available, 65);
        assert_eq!(entry.deltas()[&s.id].available, -60);
    }

    #[test]
    fn a_debit_beyond_available_is_refused_without_overdraft() {
        let (s, r) = (
            account(AccountType::Checking, 100),
            account(AccountType::Checking, 0),
        );
        let mut j = Journal::new([s.clone(), r.clone()]);
        assert_eq!(
            j.transfer(&s.id, &r.id, 101, DebitPolicy::NoOverdraft),
            Err(LedgerError::InsufficientFunds)
        );
        // Allowing overdraft changes nothing for an account that is not overdraftable.
        let mut j = Journal::new([s.clone(), r.clone()]);
        assert_eq!(
            j.transfer(&s.id, &r.id, 101, DebitPolicy::OverdraftIfAllowed),
            Err(LedgerError::InsufficientFunds)
        );
    }

    #[test]
    fn an_overdraft_locks_the_shortfall_on_the_reserve_and_a_credit_repays_it_first() {
        let (s, reserve) = overdraftable(30, 1_000);
        let r = account(AccountType::Checking, 0);
        let mut j = Journal::new([s.clone(), reserve.clone(), r.clone()]);
        j.transfer(&s.id, &r.id, 100, DebitPolicy::OverdraftIfAllowed)
            .expect("covered");
        let entry = j.finish().expect("balanced");
        assert_eq!(posting_sum(&entry), 0);
        assert_eq!(balances(&entry, &s.id).available, -70);
        let rb = balances(&entry, &reserve.id);
        assert_eq!((rb.available, rb.locked), (930, 70));

        // Now 50 comes back: all of it repays, the reserve gets 50 back.
        let accounts = entry.accounts.clone();
        let mut j = Journal::new(accounts);
        j.transfer(&r.id, &s.id, 50, DebitPolicy::NoOverdraft)
            .expect("funds");
        let entry = j.finish().expect("balanced");
        assert_eq!(balances(&entry, &s.id).available, -20);
        let rb = balances(&entry, &reserve.id);
        assert_eq!((rb.available, rb.locked), (980, 20));

        // 50 more: 20 repays, 30 raises the account above zero.
        let mut j = Journal::new(entry.accounts.clone());
        j.transfer(&r.id, &s.id, 50, DebitPolicy::NoOverdraft)
            .expect("funds");
        let entry = j.finish().expect("balanced");
        assert_eq!(balances(&entry, &s.id).available, 30);
        let rb = balances(&entry, &reserve.id);
        assert_eq!((rb.available, rb.locked), (1_000, 0));
    }

    #[test]
    fn an_overdraft_the_reserve_cannot_cover_is_refused() {
        let (s, reserve) = overdraftable(0, 99);
        let r = account(AccountType::Checking, 0);
        let mut j = Journal::new([s.clone(), reserve.clone(), r.clone()]);
        assert_eq!(
            j.transfer(&s.id, &r.id, 100, DebitPolicy::OverdraftIfAllowed),
            Err(LedgerError::InsufficientFunds)
        );
        // Without permission the overdraftable account behaves like any other.
        let mut j = Journal::new([s.clone(), reserve, r.clone()]);
        assert_eq!(
            j.transfer(&s.id, &r.id, 1, DebitPolicy::NoOverdraft),
            Err(LedgerError::InsufficientFunds)
        );
    }

    #[test]
    fn a_further_overdraft_locks_only_the_new_shortfall() {
        let (mut s, mut reserve) = overdraftable(-40, 60);
        reserve.balances.locked = 40;
        s.balances.available = -40;
        let r = account(AccountType::Checking, 0);
        let mut j = Journal::new([s.clone(), reserve.clone(), r.clone()]);
        j.transfer(&s.id, &r.id, 60, DebitPolicy::OverdraftIfAllowed)
            .expect("covered");
        let entry = j.finish().expect("balanced");
        let rb = balances(&entry, &reserve.id);
        assert_eq!((rb.available, rb.locked), (0, 100));
        assert_eq!(balances(&entry, &s.id).available, -100);
    }

    #[test]
    fn hold_release_and_partial_clear_balance() {
        let (s, r) = (
            account(AccountType::Checking, 100),
            account(AccountType::Checking, 0),
        );
        let mut j = Journal::new([s.clone(), r.clone()]);
        j.hold(&s.id, 80, DebitPolicy::NoOverdraft).expect("funds");
        let entry = j.finish().expect("balanced");
        // Available -80 and holding +80 on the same account: balanced within it.
        assert_eq!(posting_sum(&entry), 0);
        let sb = balances(&entry, &s.id);
        assert_eq!((sb.available, sb.holding), (20, 80));

        let mut j = Journal::new(entry.accounts.iter().cloned().chain([r.clone()]));
        j.release_hold(&s.id, 80).expect("held");
        j.credit_available(&r.id, 50).expect("credit");
        j.credit_available(&s.id, 30).expect("credit");
        let entry = j.finish().expect("balanced");
        let sb = balances(&entry, &s.id);
        assert_eq!((sb.available, sb.holding), (50, 0));
        assert_eq!(balances(&entry, &r.id).available, 50);
    }

    #[test]
    fn an_unbalanced_entry_is_refused() {
        let r = account(AccountType::Checking, 0);
        let mut j = Journal::new([r.clone()]);
        j.credit_available(&r.id, 5).expect("credit");
        assert!(matches!(j.finish(), Err(LedgerError::Inconsistent(_))));
    }

    #[test]
    fn releasing_more_than_is_held_is_an_invariant_failure() {
        let s = account(AccountType::Checking, 0);
        let mut j = Journal::new([s.clone()]);
        assert!(matches!(
            j.release_hold(&s.id, 1),
            Err(LedgerError::Inconsistent(_))
        ));
    }

    #[test]
    fn the_settlement_account_may_go_negative_without_bound() {
        let settlement = account(AccountType::NetworkSettlementAccount, 0);
        let r = account(AccountType::Checking, 0);
        let mut j = Journal::new([settlement.clone(), r.clone()]);
        j.transfer(&settlement.id, &r.id, 1_000, DebitPolicy::Unbounded)
            .expect("unbounded");
        let entry = j.finish().expect("balanced");
        assert_eq!(balances(&entry, &settlement.id).available, -1_000);
        // But not for a plain debit policy.
        let mut j = Journal::new(entry.accounts.clone());
        assert_eq!(
            j.transfer(&settlement.id, &r.id, 1, DebitPolicy::NoOverdraft),
            Err(LedgerError::InsufficientFunds)
        );
    }

    #[test]
    fn overflowing_amounts_are_errors_not_wraps() {
        let s = account(AccountType::NetworkSettlementAccount, -10);
        let r = account(AccountType::Checking, i64::MAX - 5);
        let mut j = Journal::new([s.clone(), r.clone()]);
        assert_eq!(
            j.transfer(&s.id, &r.id, 10, DebitPolicy::Unbounded),
            Err(LedgerError::Overflow)
        );
        let mut j = Journal::new([s.clone(), r.clone()]);
        assert_eq!(
            j.transfer(&s.id, &r.id, i64::MAX, DebitPolicy::Unbounded),
            Err(LedgerError::Overflow)
        );
    }

    #[test]
    fn a_missing_account_is_reported_not_panicked() {
        let s = account(AccountType::Checking, 10);
        let mut j = Journal::new([s.clone()]);
        let other = BankAccountId::generate(Utc::now());
        assert!(matches!(
            j.transfer(&s.id, &other, 1, DebitPolicy::NoOverdraft),
            Err(LedgerError::AccountNotLoaded(_))
        ));
    }

    /// Property check over random movements (seeded, so reproducible): whatever succeeds keeps
    /// the books balanced, the reserve's `locked` equal to the shortfalls it covers, and no
    /// forbidden negative balance; whatever fails changes nothing.
    #[test]
    fn random_movements_keep_every_invariant() {
        use rand::rngs::StdRng;
        use rand::{Rng, SeedableRng};

        let settlement = account(AccountType::NetworkSettlementAccount, 0);
        let (od1, reserve) = overdraftable(0, 0);
        let mut od2 = account(AccountType::Checking, 0);
        od2.is_overdraftable = true;
        od2.overdraft_reserve_account_id = Some(reserve.id.clone());
        let plain = [
            account(AccountType::Checking, 0),
            account(AccountType::Checking, 0),
        ];
        let mut state: BTreeMap<BankAccountId, LedgerAccount> =
            [settlement.clone(), od1, od2, reserve.clone()]
                .into_iter()
                .chain(plain)
                .map(|a| (a.id.clone(), a))
                .collect();
        let ids: Vec<BankAccountId> = state.keys().cloned().collect();
        let mut rng = StdRng::seed_from_u64(42);
        let policies = [DebitPolicy::NoOverdraft, DebitPolicy::OverdraftIfAllowed];
        for _ in 0..20_000 {
            let mut j = Journal::new(state.values().cloned());
            let a = ids[rng.gen_range(0..ids.len())].clone();
            let b = ids[rng.gen_range(0..ids.len())].clone();
            let amount = rng.gen_range(1..=1_000);
            let policy = policies[rng.gen_range(0..policies.len())];
            let result = match rng.gen_range(0..5) {
                // Money from outside, and out again.
                0 => j.transfer(&settlement.id, &a, amount, DebitPolicy::Unbounded),
                1 => j.transfer(&a, &settlement.id, amount, policy),
                2 if a != b => j.transfer(&a, &b, amount, policy),
                3 => j.hold(&a, amount, policy),
                _ => {
                    let held = state[&a].balances.holding;
                    if held == 0 {
                        continue;
                    }
                    let cleared = rng.gen_range(1..=held);
                    j.release_hold(&a, held)
                        .and_then(|()| j.credit_available(&b, cleared))
                        .and_then(|()| match held - cleared {
                            0 => Ok(()),
                            rest => j.credit_available(&a, rest),
                        })
                }
            };
            match result {
                Ok(()) => {
                    let entry = j.finish().expect("a successful movement balances");
                    assert_eq!(posting_sum(&entry), 0);
                    for changed in entry.accounts {
                        state.insert(changed.id.clone(), changed);
                    }
                }
                Err(LedgerError::InsufficientFunds) => {}
                Err(e) => panic!("unexpected {e:?}"),
            }
            let total: i64 = state
                .values()
                .map(|a| {
                    a.balances.available
                        + a.balances.pending
                        + a.balances.holding
                        + a.balances.locked
                })
                .sum();
            assert_eq!(total, 0);
            let shortfalls: i64 = state
                .values()
                .filter(|a| a.is_overdraftable)
                .map(|a| (-a.balances.available).max(0))
                .sum();
            assert_eq!(state[&reserve.id].balances.locked, shortfalls);
            for a in state.values() {
                let b = a.balances;
                assert!(b.pending >= 0 && b.holding >= 0 && b.locked >= 0, "{a:?}");
                assert!(b.available >= 0 || a.may_be_negative(), "{a:?}");
            }
        }
    }

    #[test]
    fn a_closed_reserve_cannot_cover_a_shortfall() {
        let (s, mut reserve) = overdraftable(0, 1_000);
        reserve.status = AccountStatus::Frozen;
        let r = account(AccountType::Checking, 0);
        let mut j = Journal::new([s.clone(), reserve, r.clone()]);
        assert_eq!(
            j.transfer(&s.id, &r.id, 1, DebitPolicy::OverdraftIfAllowed),
            Err(LedgerError::InsufficientFunds)
        );
    }
}
