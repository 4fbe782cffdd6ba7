// Package git is the Git source driver. It keeps one persistent bare clone
// per source under the state directory, brings it up to date with an
// incremental fetch of just the ref it follows (nothing at all when the
// remote ref has not moved), resolves refs in Flux's precedence
// (commit > name > semver > tag > branch) and turns the configured path at
// the resolved commit into an in-memory sources.Tree read straight from the
// object store, without a checkout.
//
// Transports: https://, http://, ssh:// (and scp-like user@host:path),
// file:// and local paths. Credentials come from files or the environment
// (sources.Secret) or from the URL's user info; they are never logged and
// every error this package returns is scrubbed of them. SSH always checks
// the server's host key against a known_hosts file.
package git
