// Package readapi is the HTTP surface both homes serve, built once: the
// probes, /metrics, the nodes, sources and revisions as JSON and the status
// page, behind one guard (httpguard: security headers, no caching, a
// bounded body, the Host check, read tokens) and served by one http.Server
// with the same timeouts and header limit. A home supplies what only it
// knows (its sources, whether a node is orphaned, its readiness) and mounts
// its own endpoints (legate serve's writes and webhooks, the controller's
// replica view) through Options.Routes.
//
// The package must not import a home.
package readapi
