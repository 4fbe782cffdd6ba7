// Package forge posts commit statuses to Git forges (Gitea, GitHub, GitLab)
// through their maintained Go SDKs, so that the author of a commit sees on
// the commit itself whether legate published it, the proxies accepted it,
// or it was rejected and why.
//
// A Reporter posts one status to one repository. A Dispatcher sits in front
// of the reporters: it scrubs secrets from descriptions, drops a status
// equal to the last one known for the same commit and context, stores the
// rest in a persisted Outbox and delivers them in order, retrying with
// exponential backoff while a forge is unreachable.
package forge
