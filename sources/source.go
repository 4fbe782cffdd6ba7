package sources

import "context"

// Source is one configured place that configuration is fetched from: a Git
// repository, an OCI artifact or a set of Kubernetes objects.
//
// Concurrency: Fetch is NOT safe for concurrent calls on the same Source; the
// caller runs one fetch loop per Source (poll ticks and webhook triggers feed
// the same loop). Different Sources may be fetched concurrently. A Result, and
// the file tree it holds, is immutable and stays valid after later fetches, so
// it may be read from any number of goroutines.
type Source interface {
	// Name is the configured name of the source; it is copied into
	// Origin.Source of every snapshot.
	Name() string
	// Fetch brings the source up to date and returns what its configured ref
	// points at now. Errors never contain credentials.
	Fetch(ctx context.Context) (*Result, error)
}

// Result is the outcome of one successful Fetch.
type Result struct {
	Snapshot
	// Content identifies the file tree under the configured path (the Git
	// tree hash of the path, the OCI layer digest). Equal Content means equal
	// files, whatever commit or digest they came from.
	Content string
	// Changed reports whether Content differs from the previous successful
	// Fetch of this Source in this process. It is true on the first fetch.
	// A caller re-renders only when Changed, yet still records Origin (a new
	// commit that does not touch the path still moves the source).
	Changed bool
}
