// Package hooks receives push webhooks from Gitea, GitHub and GitLab (and a
// generic signed form for CI systems), so that a push is fetched at once
// instead of at the next poll. Each handler checks the provider's signature
// or token in constant time before it reads the payload; an unsigned or
// wrongly signed request gets 401 and triggers nothing. A valid push calls
// the Trigger with every repository URL the payload names and the pushed
// ref; Watcher turns that into fetches of the configured sources that
// follow that repository. Pull-request events (GitHub and Gitea
// pull_request, Gitea pull_request_sync, GitLab Merge Request Hook) go to a
// PRTrigger instead, as a validated PullRequest: opened, head moved or
// closed, with the ref the target repository keeps its head under.
package hooks
