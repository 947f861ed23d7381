//! `Webhooks`: the platform's webhook endpoints and their delivery attempts.

use bank_api::Json;
use bank_api::models::{
    EmptyObject, EventSelector, WebhookDelivery, WebhookDeliveryList, WebhookEndpoint,
    WebhookEndpointList,
};
use bank_api::webhooks::*;

use super::Bankd;
use super::convert::IntoTwin;
use super::errors::fail;
use crate::auth::Principal;
use crate::domain::webhooks::{EndpointUpdate, NewEndpoint};
use crate::model::page::PageRequest;
use crate::model::webhooks::{DeliveryRecord, WebhookEndpointRecord};

impl WebhooksApi for Bankd {
    async fn list_webhook_endpoints(
        &self,
        principal: Principal,
        input: ListWebhookEndpointsInput,
    ) -> ListWebhookEndpointsResponse {
        let page = PageRequest::parse(Some(input.limit), input.starting_after, input.ending_before);
        let endpoints = self.services.webhook_endpoints();
        let listed = async { endpoints.list(&principal.platform_id, &page?).await };
        match listed.await.map(|page| page.map(wire)) {
            Ok(page) => ListWebhookEndpointsResponse::Ok(Json(WebhookEndpointList {
                webhook_endpoints: page.items,
                has_more: page.has_more,
            })),
            Err(e) => fail(e.into()),
        }
    }

    async fn create_webhook_endpoint(
        &self,
        principal: Principal,
        input: CreateWebhookEndpointInput,
    ) -> CreateWebhookEndpointResponse {
        let b = input.body;
        let new = NewEndpoint {
            url: b.url,
            description: b.description,
            enabled_events: b.enabled_events.map(selectors),
        };
        let endpoints = self.services.webhook_endpoints();
        match endpoints.create(&principal.platform_id, &new).await {
            Ok(e) => CreateWebhookEndpointResponse::Ok(Json(wire(e))),
            Err(e) => fail(e.into()),
        }
    }

    async fn get_webhook_endpoint(
        &self,
        principal: Principal,
        input: GetWebhookEndpointInput,
    ) -> GetWebhookEndpointResponse {
        let endpoints = self.services.webhook_endpoints();
        let id = &input.webhook_endpoint_id;
        match endpoints.get(&principal.platform_id, id).await {
            Ok(e) => GetWebhookEndpointResponse::Ok(Json(wire(e))),
            Err(e) => fail(e.into()),
        }
    }

    async fn delete_webhook_endpoint(
        &self,
        principal: Principal,
        input: DeleteWebhookEndpointInput,
    ) -> DeleteWebhookEndpointResponse {
        let endpoints = self.services.webhook_endpoints();
        let id = &input.webhook_endpoint_id;
        match endpoints.delete(&principal.platform_id, id).await {
            Ok(()) => DeleteWebhookEndpointResponse::Ok(Json(EmptyObject {})),
            Err(e) => fail(e.into()),
        }
    }

    async fn update_webhook_endpoint(
        &self,
        principal: Principal,
        input: UpdateWebhookEndpointInput,
    ) -> UpdateWebhookEndpointResponse {
        let b = input.body;
        let update = EndpointUpdate {
            url: b.url,
            description: b.description,
            enabled_events: b.enabled_events.map(selectors),
            is_disabled: b.is_disabled,
        };
        let endpoints = self.services.webhook_endpoints();
        let id = &input.webhook_endpoint_id;
        match endpoints.update(&principal.platform_id, id, &update).await {
            Ok(e) => UpdateWebhookEndpointResponse::Ok(Json(wire(e))),
            Err(e) => fail(e.into()),
        }
    }

    async fn rotate_webhook_endpoint_secret(
        &self,
        principal: Principal,
        input: RotateWebhookEndpointSecretInput,
    ) -> RotateWebhookEndpointSecretResponse {
        let endpoints = self.services.webhook_endpoints();
        let id = &input.webhook_endpoint_id;
        match endpoints.rotate_secret(&principal.platform_id, id).await {
            Ok(e) => RotateWebhookEndpointSecretResponse::Ok(Json(wire(e))),
            Err(e) => fail(e.into()),
        }
    }

    async fn list_webhook_deliveries(
        &self,
        principal: Principal,
        input: ListWebhookDeliveriesInput,
    ) -> ListWebhookDeliveriesResponse {
        let page = PageRequest::parse(Some(input.limit), input.starting_after, input.ending_before);
        let endpoints = self.services.webhook_endpoints();
        let (platform, id) = (&principal.platform_id, &input.webhook_endpoint_id);
        let listed = async { endpoints.deliveries(platform, id, &page?).await };
        match listed.await.map(|page| page.map(wire_delivery)) {
            Ok(page) => ListWebhookDeliveriesResponse::Ok(Json(WebhookDeliveryList {
                deliveries: page.items,
                has_more: page.has_more,
            })),
            Err(e) => fail(e.into()),
        }
    }

    async fn retry_webhook_delivery(
        &self,
        principal: Principal,
        input: RetryWebhookDeliveryInput,
    ) -> RetryWebhookDeliveryResponse {
        let endpoints = self.services.webhook_endpoints();
        let (endpoint, delivery) = (&input.webhook_endpoint_id, &input.webhook_delivery_id);
        match endpoints
            .retry(&principal.platform_id, endpoint, delivery)
            .await
        {
            Ok(d) => RetryWebhookDeliveryResponse::Ok(Json(wire_delivery(d))),
            Err(e) => fail(e.into()),
        }
    }
}

fn selectors(list: Vec<EventSelector>) -> Vec<String> {
    list.into_iter().map(|s| s.0).collect()
}

/// The wire shape of an endpoint.
fn wire(e: WebhookEndpointRecord) -> WebhookEndpoint {
    WebhookEndpoint {
        id: e.id.into_string(),
        url: e.url,
        description: e.description,
        enabled_events: e.enabled_events.into_iter().map(EventSelector).collect(),
        is_disabled: e.is_disabled,
        secret: e.secret,
        created_at: e.created_at,
        updated_at: e.updated_at,
    }
}

/// The wire shape of a delivery attempt.
fn wire_delivery(d: DeliveryRecord) -> WebhookDelivery {
    WebhookDelivery {
        id: d.id.into_string(),
        event_id: d.event_id.into_string(),
        attempt: d.attempt,
        status: d.status.twin(),
        response_status: d.response_status,
        latency_ms: d.latency_ms,
        error: d.error,
        created_at: d.created_at,
        next_attempt_at: d.next_attempt_at,
    }
}
