// Package git is the Git source driver. It keeps one persistent bare clone
// per source under the state directory, brings it up to date with an
// incremental fetch of just the ref it follows, resolves refs in Flux's precedence
// (commit > name > semver > tag > branch) and turns the configured path at
// the resolved commit into an in-memory sources.Tree read straight from the
// object store, without a checkout.
//
// One poll is one upload-pack session: the remote's ref advertisement
// (one HTTP request) answers whether the ref moved, and only then is the
// pack asked for (a second request), offering the clone's tip and a few
// ancestors as haves. The packs fetched are merged as they pile up.
//
// Transports: https://, http://, ssh:// (and scp-like user@host:path),
// file:// and local paths. Credentials come from files or the environment
// (sources.Secret) or from the URL's user info; they are never logged and
// every error this package returns is scrubbed of them. SSH always checks
// the server's host key against a known_hosts file.
package git
