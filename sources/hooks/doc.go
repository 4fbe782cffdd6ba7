// Package hooks receives push webhooks from Gitea, GitHub and GitLab (and a
// generic signed form for CI systems), so that a push is fetched at once
// instead of at the next poll. Each handler checks the provider's signature
// or token in constant time before it reads the payload; an unsigned or
// wrongly signed request gets 401 and triggers nothing. A valid push calls
// the Trigger with every repository URL the payload names and the pushed
// ref; Watcher turns that into fetches of the configured sources that
// follow that repository.
package hooks
