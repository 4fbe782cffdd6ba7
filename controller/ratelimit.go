package controller

import "k8s.io/client-go/rest"

// unthrottled is cfg without client-go's own rate limit when cfg sets
// none. A configuration that leaves QPS at 0 (`--kubeconfig FILE`, a
// rest.Config built by hand) otherwise gets client-go's default token
// bucket, 5 requests/s with a burst of 10: every publication writes its
// revision and record, every rollback a status, so a burst of a few
// updates queued every later write 200 ms behind the previous one inside
// the controller, a wait no API server asked for (a rejected update took
// 0.56 s p50 / 1.07 s p99 to show Rollback instead of 0.13 / 0.62 s:
// BenchmarkRollbackSeenByKubectl). controller-runtime's own loader
// (ctrl.GetConfig, used in a pod) turns it off the same way; the API
// server's priority and fairness is what bounds a client now. A QPS or a
// rate limiter the caller set is kept.
func unthrottled(cfg *rest.Config) *rest.Config {
	if cfg.QPS != 0 || cfg.RateLimiter != nil {
		return cfg
	}
	out := rest.CopyConfig(cfg)
	out.QPS = -1 // client-go: negative disables the client-side limiter
	return out
}
