// Package oci is the OCI artifact source driver. It follows an artifact in a
// registry by tag, semver range over tags, or digest, downloads it only when
// the manifest digest moved, and unpacks its content layer (Flux's
// application/vnd.cncf.flux.content.v1.tar+gzip as written by
// `flux push artifact`, or a plain tar / tar+gzip layer) into an in-memory
// sources.Tree, refusing unsafe archives: paths leaving the root, links,
// devices and archives over the size limits.
//
// The manifest digest goes on Origin.Digest; the commit the artifact was
// built from goes on Origin.Commit when the manifest carries the
// org.opencontainers.image.revision annotation ("main@sha1:<sha>",
// "sha1:<sha>", "main/<sha>" or a bare SHA), so commit statuses work for
// configurations built and pushed by CI.
package oci
