//! `Balances` gained `locked_amount`: every place that builds one must now say it.
use bank_api::models::Balances;

fn zero() -> Balances {
    Balances { available_amount: 0, pending_amount: 0, holding_amount: 0 }
}

fn main() {}
