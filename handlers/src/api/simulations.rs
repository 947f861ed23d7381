//! `Simulations`: incoming ACH credits and debits, for sandbox (`test_`) keys only.

use bank_api::Json;
use bank_api::models::{AchTransfer, ErrorType, SimulateAchRequest};
use bank_api::simulations::*;

use super::Bankd;
use super::ach_transfers::wire;
use super::errors::{ApiError, fail};
use crate::auth::Principal;
use crate::domain::transfers::{AchFields, IncomingAch};
use crate::model::transfers::AchDirection;

impl SimulationsApi for Bankd {
    async fn simulate_receive_ach_credit(
        &self,
        principal: Principal,
        input: SimulateReceiveAchCreditInput,
    ) -> SimulateReceiveAchCreditResponse {
        match self
            .receive(&principal, AchDirection::Credit, input.body)
            .await
        {
            Ok(t) => SimulateReceiveAchCreditResponse::Ok(Json(t)),
            Err(e) => fail(e),
        }
    }

    async fn simulate_receive_ach_debit(
        &self,
        principal: Principal,
        input: SimulateReceiveAchDebitInput,
    ) -> SimulateReceiveAchDebitResponse {
        match self
            .receive(&principal, AchDirection::Debit, input.body)
            .await
        {
            Ok(t) => SimulateReceiveAchDebitResponse::Ok(Json(t)),
            Err(e) => fail(e),
        }
    }
}

impl Bankd {
    /// Both simulations: refuse live keys, check the body, record the transfer in one write.
    async fn receive(
        &self,
        principal: &Principal,
        direction: AchDirection,
        body: SimulateAchRequest,
    ) -> Result<AchTransfer, ApiError> {
        if !principal.is_sandbox() {
            return Err(ApiError::new(
                403,
                ErrorType::AuthenticationError,
                "sandbox_only",
                "simulations are available to sandbox (test_) keys only",
            ));
        }
        let ach = IncomingAch::parse(
            direction,
            AchFields {
                destination_account_number_id: body.destination_account_number_id,
                amount: body.amount,
                currency_code: body.currency_code,
                company_id: body.company_id,
                company_name: body.company_name,
                description: body.description,
            },
        )?;
        let received = self
            .transfers()
            .receive_ach(&principal.platform_id, &ach)
            .await?;
        Ok(wire(received))
    }
}
