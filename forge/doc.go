// Package forge tells the author of a commit, on the commit itself, what
// legate did with it: published, accepted by the proxies, rejected by
// validation or by the proxies (with their text), rolled back. It serves
// every origin that names a commit, Git repositories and OCI artifacts
// alike, and posts through the forges' maintained Go SDKs (Gitea, GitHub,
// GitLab).
//
//   - Feedback subscribes to the revision engine's outcomes and decides the
//     statuses: one check per node ("legate/<node>"), a validation failure
//     on the checks of every node the source rendered, and a pending check
//     closed when a newer commit supersedes it.
//   - A Dispatcher scrubs secrets from descriptions, drops a status equal to
//     the last one of the same check, keeps the rest in the revision
//     store's persisted outbox (revisions.Outbox; a newer state of a check
//     replaces a queued one) and delivers them in order, retrying with
//     backoff while a forge is unreachable.
//   - A Reporter posts one status to one repository; its token comes from a
//     TokenFunc, asked on every post (a file or the environment in
//     standalone, a Kubernetes Secret in the Kubernetes home), so that a
//     rotated token takes effect at the next post.
//   - A Commenter (the three reporters are) keeps one comment per pull
//     request, found by a marker that opens its body and edited in place;
//     Dispatcher.EnqueueComment queues it in the same outbox, a newer body
//     replacing a queued one. Bodies are scrubbed and cut at the forge's
//     limit; answers from the forge are read up to a bound.
//
// The package imports revisions (for outcomes and the outbox) and sources;
// it must not import a home (standalone, the Kubernetes controller), the
// xDS server or a store implementation.
package forge
