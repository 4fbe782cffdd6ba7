// Package prs previews pull requests: for a pull request whose target
// branch a source follows, it fetches the request's head into a work area
// of its own, renders it exactly as the source's commits are rendered,
// compares the result with what the source serves now (package preview)
// and tells the author on the request: a commit status "legate/preview" on
// the head and one comment, found by a hidden marker and edited in place
// on every push. Nothing is stored as a revision and nothing is published:
// the package never sees the revision engine, only the served
// configurations a home hands it.
//
//   - Queue bounds the work: at most N previews run at once, each request
//     keeps only its newest head (a storm of pushes renders the last one
//     once, and a newer head cancels the render of an older one), and a
//     closed request drops its queued work and its work area.
//   - Previewer does one preview of one source.
//   - GitFetcher fetches a head into a request's work area with the
//     source's own bounds (size, files, time, memory budget).
//
// The package imports sources, render, preview and forge; it must not
// import a home, the revision engine or the xDS server.
package prs
