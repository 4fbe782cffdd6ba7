package sources

import (
	"fmt"
	"io/fs"
)

// Kind names the family of a source.
type Kind string

const (
	KindGit  Kind = "git"
	KindOCI  Kind = "oci"
	KindKube Kind = "kube"
)

// Origin records where a configuration came from. Every revision carries the
// Origin of the snapshot it was rendered from, so that feedback (commit
// statuses, conditions) can be sent back to the exact commit or object.
type Origin struct {
	Kind Kind `json:"kind"`
	// Source is the name of the configured source that produced the snapshot.
	Source string `json:"source,omitempty"`
	// URL of the repository or artifact, without credentials.
	URL string `json:"url,omitempty"`
	// Ref is the branch, tag or OCI tag that was followed.
	Ref string `json:"ref,omitempty"`
	// Path is the directory inside the repository or artifact.
	Path string `json:"path,omitempty"`
	// Commit is the full Git commit SHA, when known (for OCI artifacts, from
	// the org.opencontainers.image.revision annotation).
	Commit string `json:"commit,omitempty"`
	// Digest is the OCI manifest digest (sha256:…), for OCI sources.
	Digest string `json:"digest,omitempty"`
	// Author and Message describe the commit, when known.
	Author  string `json:"author,omitempty"`
	Message string `json:"message,omitempty"`
	// Namespace, Name and Generation identify a Kubernetes object.
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	Generation int64  `json:"generation,omitempty"`
}

// Revision is the display form of the origin in Flux's vocabulary:
// "main@sha1:<sha>" for Git, "latest@sha256:<hex>" for OCI, without the
// "<ref>@" part when the source is pinned to a commit or digest,
// "<namespace>/<name>@<generation>" for Kubernetes objects.
func (o Origin) Revision() string {
	switch o.Kind {
	case KindGit:
		switch {
		case o.Commit == "":
			return o.Ref
		case o.Ref == "": // pinned to a commit
			return "sha1:" + o.Commit
		}
		return fmt.Sprintf("%s@sha1:%s", o.Ref, o.Commit)
	case KindOCI:
		switch {
		case o.Digest == "":
			return o.Ref
		case o.Ref == "": // pinned to a digest
			return o.Digest
		}
		return fmt.Sprintf("%s@%s", o.Ref, o.Digest)
	case KindKube:
		return fmt.Sprintf("%s/%s@%d", o.Namespace, o.Name, o.Generation)
	default:
		return ""
	}
}

// Snapshot is one fetch of a source: a read-only file tree rooted at the
// configured path, and where it came from.
type Snapshot struct {
	Files  fs.FS
	Origin Origin
}
