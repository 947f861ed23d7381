//! `Platform`: the caller's own platform settings.

use bank_api::Json;
use bank_api::models::{AdditionalRequirementField, Platform};
use bank_api::platform::*;

use super::Bankd;
use super::convert::IntoTwin;
use super::errors::fail;
use crate::auth::Principal;
use crate::domain::platforms::SettingsUpdate;
use crate::model::platforms::PlatformRecord;

impl PlatformApi for Bankd {
    async fn get_platform(
        &self,
        principal: Principal,
        _input: GetPlatformInput,
    ) -> GetPlatformResponse {
        let platforms = self.services.platforms();
        match platforms.get_platform(&principal.platform_id).await {
            Ok(p) => GetPlatformResponse::Ok(Json(wire(p))),
            Err(e) => fail(e.into()),
        }
    }

    async fn update_platform(
        &self,
        principal: Principal,
        input: UpdatePlatformInput,
    ) -> UpdatePlatformResponse {
        let update = SettingsUpdate {
            reporting_time_zone: input.body.reporting_time_zone,
            additional_requirements: input
                .body
                .additional_requirements
                .map(|fields| fields.into_iter().map(IntoTwin::twin).collect()),
        };
        let platforms = self.services.platforms();
        match platforms
            .update_settings(&principal.platform_id, update)
            .await
        {
            Ok(p) => UpdatePlatformResponse::Ok(Json(wire(p))),
            Err(e) => fail(e.into()),
        }
    }
}

/// The wire shape of a stored platform.
fn wire(p: PlatformRecord) -> Platform {
    let additional_requirements: Vec<AdditionalRequirementField> =
        serde_json::from_str(&p.additional_requirements).unwrap_or_default();
    Platform {
        id: p.id.as_str().to_owned(),
        name: p.name,
        reporting_time_zone: p.reporting_time_zone,
        additional_requirements,
        created_at: p.created_at,
        updated_at: p.updated_at,
    }
}
