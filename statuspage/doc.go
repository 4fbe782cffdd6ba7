// Package statuspage is what both homes show people: the node view of
// GET /api/v1/nodes (the engine's status with the proxies, the newest
// attempt and its verdict, a summary in plain words), the source view of
// GET /api/v1/sources, and the status page at GET / rendered from them
// (html/template; every value escaped, no script). legate serve and
// legate controller serve the same views and the same page, so an
// operator reads both homes the same way.
//
// The package must not import a home.
package statuspage
