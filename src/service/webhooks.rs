//! Webhook endpoints (permission `webhooks`), the one door for the HTTP routes: create
//! or update, list, delete, rotate the secret, read the delivery log, redeliver.
//! Endpoints belong to an app; a scope token cannot manage them (an end user's token
//! must not redirect the app's notifications).

use uuid::Uuid;

use super::{Owner, ServiceError, Tasklane};
use crate::store::webhooks::{self, Delivery, Endpoint};
use crate::store::{self};
use crate::webhooks::{endpoint, signature};

/// Most notifications one page of the delivery log returns.
pub const MAX_DELIVERY_PAGE: i64 = 100;

/// What `PUT /v1/webhooks/{name}` asks for.
#[derive(Debug, Clone)]
pub struct WebhookSpec {
    pub url: String,
    pub events: Vec<String>,
    /// The app's own secret; generated when absent at creation.
    pub secret: Option<String>,
}

/// An endpoint, with its secret when this call created or rotated it (shown once).
#[derive(Debug, Clone)]
pub struct EndpointWithSecret {
    pub endpoint: Endpoint,
    pub secret: Option<String>,
}

fn app_only(owner: &Owner) -> Result<&str, ServiceError> {
    match owner.scope_id {
        Some(_) => Err(ServiceError::OtherScope),
        None => Ok(&owner.app),
    }
}

impl Tasklane {
    /// Creates endpoint `name` of the owner's app, or updates its URL and events and
    /// enables it again. A secret given on an update becomes the current one (the old
    /// one signs 24 h more, as on rotation); the answer shows a secret only when the
    /// endpoint was created.
    pub async fn put_webhook(
        &self,
        owner: &Owner,
        name: &str,
        spec: &WebhookSpec,
    ) -> Result<EndpointWithSecret, ServiceError> {
        let app = app_only(owner)?;
        endpoint::name(name)?;
        endpoint::url(&spec.url)?;
        let events = endpoint::events(&spec.events)?;
        if let Some(secret) = &spec.secret {
            endpoint::secret(secret)?;
        }
        let mut object = self.connection().await?;
        let client: &mut tokio_postgres::Client = &mut object;
        let tx = client.transaction().await?;
        let endpoint = webhooks::upsert(&tx, app, name, &spec.url, &events).await?;
        let secret = match (&spec.secret, endpoint.created) {
            (Some(given), _) => Some(given.clone()),
            (None, true) => Some(signature::generate_secret()),
            (None, false) => None,
        };
        if let Some(secret) = &secret {
            webhooks::rotate_secret(&tx, endpoint.id, secret).await?;
        }
        tx.commit().await?;
        let shown = secret.filter(|_| endpoint.created);
        Ok(EndpointWithSecret {
            endpoint,
            secret: shown,
        })
    }

    /// The owner's app's endpoints, by name.
    pub async fn list_webhooks(&self, owner: &Owner) -> Result<Vec<Endpoint>, ServiceError> {
        let app = app_only(owner)?;
        let client = self.connection().await?;
        Ok(webhooks::list(store::client(&client), app).await?)
    }

    /// Deletes endpoint `name` with its secrets and notifications.
    pub async fn delete_webhook(&self, owner: &Owner, name: &str) -> Result<(), ServiceError> {
        let app = app_only(owner)?;
        endpoint::name(name)?;
        let client = self.connection().await?;
        if !webhooks::delete(store::client(&client), app, name).await? {
            return Err(ServiceError::WebhookNotFound);
        }
        Ok(())
    }

    /// A new current secret for endpoint `name`; the previous one signs for 24 h more.
    pub async fn rotate_webhook_secret(
        &self,
        owner: &Owner,
        name: &str,
    ) -> Result<EndpointWithSecret, ServiceError> {
        let app = app_only(owner)?;
        endpoint::name(name)?;
        let mut object = self.connection().await?;
        let client: &mut tokio_postgres::Client = &mut object;
        let tx = client.transaction().await?;
        let endpoint = webhooks::lock(&tx, app, name)
            .await?
            .ok_or(ServiceError::WebhookNotFound)?;
        let secret = signature::generate_secret();
        webhooks::rotate_secret(&tx, endpoint.id, &secret).await?;
        tx.commit().await?;
        Ok(EndpointWithSecret {
            endpoint,
            secret: Some(secret),
        })
    }

    /// The newest `limit` (1..=100) notifications of endpoint `name`.
    pub async fn webhook_deliveries(
        &self,
        owner: &Owner,
        name: &str,
        limit: i64,
    ) -> Result<Vec<Delivery>, ServiceError> {
        let app = app_only(owner)?;
        endpoint::name(name)?;
        crate::task::bounds::within("limit", limit, &(1..=MAX_DELIVERY_PAGE))?;
        let client = self.connection().await?;
        let client = store::client(&client);
        let endpoint = webhooks::get(client, app, name)
            .await?
            .ok_or(ServiceError::WebhookNotFound)?;
        Ok(webhooks::deliveries(client, endpoint.id, limit).await?)
    }

    /// Sends notification `id` of endpoint `name` again (same webhook-id, its retry
    /// schedule afresh). A disabled endpoint refuses: PUT it again first.
    pub async fn redeliver_webhook(
        &self,
        owner: &Owner,
        name: &str,
        id: Uuid,
    ) -> Result<(), ServiceError> {
        let app = app_only(owner)?;
        endpoint::name(name)?;
        let client = self.connection().await?;
        let client = store::client(&client);
        let endpoint = webhooks::get(client, app, name)
            .await?
            .ok_or(ServiceError::WebhookNotFound)?;
        if endpoint.disabled {
            return Err(ServiceError::EndpointDisabled);
        }
        if !webhooks::redeliver(client, endpoint.id, id).await? {
            return Err(ServiceError::DeliveryNotFound);
        }
        Ok(())
    }
}
