//! Transfer kinds and statuses, as stored and as the rules use them.

/// Status of a book transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BookTransferStatus {
    Hold,
    Completed,
    Canceled,
    /// Part of the contract's enum; this server refuses a failing transfer with an error instead
    /// of recording it, so no transfer is ever stored in this status.
    Rejected,
}

impl BookTransferStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            BookTransferStatus::Hold => "HOLD",
            BookTransferStatus::Completed => "COMPLETED",
            BookTransferStatus::Canceled => "CANCELED",
            BookTransferStatus::Rejected => "REJECTED",
        }
    }

    pub fn parse(text: &str) -> Option<BookTransferStatus> {
        [Self::Hold, Self::Completed, Self::Canceled, Self::Rejected]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// Direction of an incoming ACH transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AchDirection {
    /// Money arrives.
    Credit,
    /// Money is taken.
    Debit,
}

impl AchDirection {
    pub fn as_str(self) -> &'static str {
        match self {
            AchDirection::Credit => "CREDIT",
            AchDirection::Debit => "DEBIT",
        }
    }

    pub fn parse(text: &str) -> Option<AchDirection> {
        [Self::Credit, Self::Debit]
            .into_iter()
            .find(|d| d.as_str() == text)
    }
}

/// Status of an ACH transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AchStatus {
    Completed,
    /// Moved no money; see the record's return code.
    Returned,
}

impl AchStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AchStatus::Completed => "COMPLETED",
            AchStatus::Returned => "RETURNED",
        }
    }

    pub fn parse(text: &str) -> Option<AchStatus> {
        [Self::Completed, Self::Returned]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}
