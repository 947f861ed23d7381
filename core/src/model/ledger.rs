//! The ledger's records: the four balances of an account, the account as the ledger sees it, and
//! a finished journal entry (what the store writes). The rules that build entries live in
//! `crate::domain::ledger`.

use std::collections::BTreeMap;

use crate::model::ids::BankAccountId;

spelled_enum! {
    /// A bank account's type. `Checking` is the only type made through the API; the others are
    /// the platform's root accounts, made with it: `OverdraftReserve` covers overdrafts,
    /// `NetworkSettlementAccount` stands for the outside world.
    pub enum AccountType {
        Checking = "CHECKING",
        OverdraftReserve = "OVERDRAFT_RESERVE",
        ProgramReserve = "PROGRAM_RESERVE",
        NetworkSettlementAccount = "NETWORK_SETTLEMENT_ACCOUNT",
    }
}

spelled_enum! {
    /// A bank account's status; only `Open` takes money movements.
    pub enum AccountStatus { Open = "open", Closed = "closed", Frozen = "frozen" }
}

/// One of the four balances of a bank account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BalanceKind {
    Available,
    Pending,
    Holding,
    Locked,
}

impl BalanceKind {
    pub const ALL: [BalanceKind; 4] = [
        BalanceKind::Available,
        BalanceKind::Pending,
        BalanceKind::Holding,
        BalanceKind::Locked,
    ];

    /// The spelling of `ledger_postings.balance`.
    pub fn as_str(self) -> &'static str {
        match self {
            BalanceKind::Available => "available",
            BalanceKind::Pending => "pending",
            BalanceKind::Holding => "holding",
            BalanceKind::Locked => "locked",
        }
    }

    pub fn parse(text: &str) -> Option<BalanceKind> {
        BalanceKind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// The four balances, in minor units of the account's currency.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Balances {
    pub available: i64,
    pub pending: i64,
    pub holding: i64,
    pub locked: i64,
}

impl Balances {
    pub fn get(&self, kind: BalanceKind) -> i64 {
        match kind {
            BalanceKind::Available => self.available,
            BalanceKind::Pending => self.pending,
            BalanceKind::Holding => self.holding,
            BalanceKind::Locked => self.locked,
        }
    }

    pub(crate) fn get_mut(&mut self, kind: BalanceKind) -> &mut i64 {
        match kind {
            BalanceKind::Available => &mut self.available,
            BalanceKind::Pending => &mut self.pending,
            BalanceKind::Holding => &mut self.holding,
            BalanceKind::Locked => &mut self.locked,
        }
    }
}

/// What the ledger needs to know of a (locked) bank account.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerAccount {
    pub id: BankAccountId,
    pub account_type: AccountType,
    pub status: AccountStatus,
    pub currency_code: String,
    pub balances: Balances,
    pub is_overdraftable: bool,
    pub overdraft_reserve_account_id: Option<BankAccountId>,
}

impl LedgerAccount {
    pub fn is_open(&self) -> bool {
        self.status == AccountStatus::Open
    }

    pub fn is_settlement(&self) -> bool {
        self.account_type == AccountType::NetworkSettlementAccount
    }

    /// May `available` be negative at rest (the table's CHECK says the same)?
    pub(crate) fn may_be_negative(&self) -> bool {
        self.is_overdraftable || self.is_settlement()
    }
}

/// One signed change of one balance of one account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posting {
    pub bank_account_id: BankAccountId,
    pub balance: BalanceKind,
    pub amount: i64,
}

/// A finished, balanced journal entry: what the store writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Non-zero nets, ordered by account id then balance.
    pub postings: Vec<Posting>,
    /// The accounts after the movement (only those that changed).
    pub accounts: Vec<LedgerAccount>,
}

impl Entry {
    /// The net change of each changed account, as the store applies it.
    pub fn deltas(&self) -> BTreeMap<&BankAccountId, Balances> {
        let mut out: BTreeMap<&BankAccountId, Balances> = BTreeMap::new();
        for p in &self.postings {
            // Nets of one (account, balance) pair are already summed; no overflow possible.
            *out.entry(&p.bank_account_id)
                .or_default()
                .get_mut(p.balance) = p.amount;
        }
        out
    }
}
