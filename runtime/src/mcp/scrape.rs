//! The metrics listener of `toolcat serve --metrics ADDR`: Prometheus text at [`METRICS_PATH`].

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};

use super::loopback;

/// The one path the metrics listener serves.
pub const METRICS_PATH: &str = "/metrics";

/// The content type of the Prometheus text exposition format, version 0.0.4.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

fn text(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}

/// One scrape: `GET` (or `HEAD`) [`METRICS_PATH`] with a loopback `Host` of `port` answers 200
/// and `render()`; a foreign `Host` 403 (the MCP endpoint's rule, against DNS rebinding), another
/// path 404, another method 405, each with a plain-text reason.
fn answer(
    request: &Request<Incoming>,
    port: u16,
    render: &dyn Fn() -> String,
) -> Response<Full<Bytes>> {
    let host = request
        .headers()
        .get(hyper::header::HOST)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    if let Err(message) = loopback::check_host(host.as_deref(), port) {
        return text(
            StatusCode::FORBIDDEN,
            "text/plain; charset=utf-8",
            message + "\n",
        );
    }
    if request.uri().path() != METRICS_PATH {
        return text(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            format!(
                "no metrics at `{}`; they are at `{METRICS_PATH}`\n",
                request.uri().path()
            ),
        );
    }
    if request.method() != hyper::Method::GET && request.method() != hyper::Method::HEAD {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            format!("`{}` is not served; scrape with GET\n", request.method()),
        );
    }
    text(StatusCode::OK, PROMETHEUS_TEXT, render())
}

/// Serves the metrics `render` returns (Prometheus text exposition, e.g.
/// `metrics_exporter_prometheus::PrometheusHandle::render`) at [`METRICS_PATH`] on `listener`
/// (bound by the caller, so a bad address is its error at once) until the process ends.
/// Requests must name a loopback host with the listener's port in their `Host` header (403
/// otherwise), as on the MCP endpoint: callers bind loopback addresses (`toolcat serve
/// --metrics` refuses others). A client has
/// [`HEADER_READ_TIMEOUT`](super::HEADER_READ_TIMEOUT) to send its headers.
///
/// # Errors
/// When the listener's address cannot be read.
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    render: impl Fn() -> String + Send + Sync + 'static,
) -> std::io::Result<()> {
    let port = listener.local_addr()?.port();
    let render: Arc<dyn Fn() -> String + Send + Sync> = Arc::new(render);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("metrics: accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let render = Arc::clone(&render);
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request| {
                let response = answer(&request, port, render.as_ref());
                async move { Ok::<_, Infallible>(response) }
            });
            super::serve_connection(stream, handler, "metrics").await;
        });
    }
}
