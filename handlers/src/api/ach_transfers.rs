//! `ACH Transfers`: the platform's incoming ACH transfers (made by the simulations), get and
//! list. Errors map through `impl From<TransferError> for ApiError` in `book_transfers`.

use bank_api::Json;
use bank_api::ach_transfers::*;
use bank_api::models::{AchTransfer, AchTransferList, AchTransferStatus, AchTransferType};

use super::Bankd;
use super::errors::fail;
use crate::auth::Principal;
use crate::model::page::PageRequest;
use crate::model::transfers::AchTransferRecord;
use crate::model::transfers::{AchDirection, AchStatus};

impl AchTransfersApi for Bankd {
    async fn list_ach_transfers(
        &self,
        principal: Principal,
        input: ListAchTransfersInput,
    ) -> ListAchTransfersResponse {
        let page = PageRequest::parse(Some(input.limit), input.starting_after, input.ending_before);
        let transfers = self.transfers();
        let listed = async { transfers.list_ach(&principal.platform_id, &page?).await };
        match listed.await {
            Ok(page) => ListAchTransfersResponse::Ok(Json(AchTransferList {
                transfers: page.items.into_iter().map(wire).collect(),
                has_more: page.has_more,
            })),
            Err(e) => fail(e.into()),
        }
    }

    async fn get_ach_transfer(
        &self,
        principal: Principal,
        input: GetAchTransferInput,
    ) -> GetAchTransferResponse {
        let transfers = self.transfers();
        match transfers
            .get_ach(&principal.platform_id, &input.ach_transfer_id)
            .await
        {
            Ok(t) => GetAchTransferResponse::Ok(Json(wire(t))),
            Err(e) => fail(e.into()),
        }
    }
}

/// The wire shape of a stored ACH transfer (shared with the simulations).
pub(super) fn wire(t: AchTransferRecord) -> AchTransfer {
    AchTransfer {
        id: t.id.into_string(),
        r#type: match t.direction {
            AchDirection::Credit => AchTransferType::Credit,
            AchDirection::Debit => AchTransferType::Debit,
        },
        is_incoming: t.is_incoming,
        status: match t.status {
            AchStatus::Completed => AchTransferStatus::Completed,
            AchStatus::Returned => AchTransferStatus::Returned,
        },
        return_code: t.return_code,
        bank_account_id: t.bank_account_id.into_string(),
        account_number_id: t.account_number_id.into_string(),
        amount: t.amount,
        currency_code: t.currency_code,
        company_id: t.company_id,
        company_name: t.company_name,
        created_at: t.created_at,
    }
}
