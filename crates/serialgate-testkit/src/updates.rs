//! An MCP client that hears `notifications/resources/updated`: rmcp's
//! client with a handler that queues every updated URI, over the daemon's
//! stdio or streamable HTTP, for the tests of resource subscriptions.

use std::time::Duration;

use rmcp::model::{
    ReadResourceRequestParams, ResourceUpdatedNotificationParam, SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::{Mutex, mpsc};

use crate::client::{Outcome, to_outcome};

/// Queues the URI of every `notifications/resources/updated`.
#[derive(Clone)]
pub struct UpdateQueue {
    tx: mpsc::UnboundedSender<String>,
}

impl ClientHandler for UpdateQueue {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.tx.send(params.uri);
    }
}

/// A client session whose resource updates can be awaited.
pub struct UpdatesClient {
    service: RunningService<RoleClient, UpdateQueue>,
    updates: Mutex<mpsc::UnboundedReceiver<String>>,
}

impl UpdatesClient {
    /// Initializes MCP over a daemon's stdout and stdin.
    pub async fn stdio(
        stdout: tokio::process::ChildStdout,
        stdin: tokio::process::ChildStdin,
    ) -> anyhow::Result<UpdatesClient> {
        let (tx, rx) = mpsc::unbounded_channel();
        let service = UpdateQueue { tx }.serve((stdout, stdin)).await?;
        Ok(UpdatesClient {
            service,
            updates: Mutex::new(rx),
        })
    }

    /// Opens an MCP session over streamable HTTP with a bearer token.
    pub async fn http(url: &str, token: &str) -> anyhow::Result<UpdatesClient> {
        let (tx, rx) = mpsc::unbounded_channel();
        let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
        let transport = StreamableHttpClientTransport::from_config(config);
        let service = UpdateQueue { tx }.serve(transport).await?;
        Ok(UpdatesClient {
            service,
            updates: Mutex::new(rx),
        })
    }

    /// A sessionless client of protocol `2026-07-28` over streamable HTTP
    /// (`server/discover`; subscriptions through `subscriptions/listen`).
    pub async fn sessionless(url: &str, token: &str) -> anyhow::Result<UpdatesClient> {
        let (tx, rx) = mpsc::unbounded_channel();
        let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
        let transport = StreamableHttpClientTransport::from_config(config);
        let lifecycle = rmcp::service::ClientLifecycleMode::Discover {
            preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        };
        let service = rmcp::service::ClientServiceExt::serve_with_lifecycle(
            UpdateQueue { tx },
            transport,
            lifecycle,
        )
        .await?;
        Ok(UpdatesClient {
            service,
            updates: Mutex::new(rx),
        })
    }

    /// `subscriptions/listen` to the updates of `uris`: the stream, whose
    /// [`next_updated`] gives each updated URI.
    pub async fn listen(&self, uris: &[String]) -> Result<rmcp::service::Subscription, String> {
        let filter = rmcp::model::SubscriptionFilter::builder()
            .resource_subscriptions(uris.iter().cloned())
            .build();
        self.service.listen(filter).await.map_err(|e| e.to_string())
    }

    /// Calls a tool with JSON arguments.
    pub async fn call(&self, tool: &str, args: Value) -> Outcome {
        let mut params = rmcp::model::CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        to_outcome(self.service.call_tool(params).await.expect("MCP transport"))
    }

    /// `resources/subscribe`; the error's text when it is refused.
    #[allow(deprecated)] // the legacy sessions this client keeps use it
    pub async fn subscribe(&self, uri: &str) -> Result<(), String> {
        self.service
            .subscribe(SubscribeRequestParams::new(uri))
            .await
            .map_err(|e| e.to_string())
    }

    /// A resource's text; the error's text when it is refused.
    pub async fn read(&self, uri: &str) -> Result<String, String> {
        let result = self
            .service
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .map_err(|e| e.to_string())?;
        let mut text = String::new();
        for c in result.contents {
            if let rmcp::model::ResourceContents::TextResourceContents { text: t, .. } = c {
                text.push_str(&t);
            }
        }
        Ok(text)
    }

    /// The next updated URI within `within`, or `None`.
    pub async fn next_update(&self, within: Duration) -> Option<String> {
        let mut updates = self.updates.lock().await;
        tokio::time::timeout(within, updates.recv())
            .await
            .ok()
            .flatten()
    }

    /// An updated URI already queued, without waiting.
    pub async fn queued_update(&self) -> Option<String> {
        self.updates.lock().await.try_recv().ok()
    }
}

/// The URI of the next `notifications/resources/updated` on a
/// `subscriptions/listen` stream within `within`, or `None`.
pub async fn next_updated(
    subscription: &mut rmcp::service::Subscription,
    within: Duration,
) -> Option<String> {
    let next = tokio::time::timeout(within, async {
        loop {
            match subscription.next().await {
                Ok(Some(rmcp::model::ServerNotification::ResourceUpdatedNotification(n))) => {
                    return Some(n.params.uri);
                }
                Ok(Some(_)) => continue,
                _ => return None,
            }
        }
    });
    next.await.ok().flatten()
}
