// Package revisions is the revision engine: it keeps a bounded history of
// rendered configurations per node ID, decides which revision to publish,
// taints revisions that proxies reject and rolls back to the last good one.
// It talks to its storage through the Store interface and never sees gRPC.
package revisions
