package standalone

import "github.com/prometheus/client_golang/prometheus"

// metrics of the fetch loops (the pipeline has the render metrics). Labels are source names: bounded by the
// configuration.
type metrics struct {
	fetchDuration *prometheus.HistogramVec
	fetchErrors   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		fetchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "legate_source_fetch_duration_seconds",
			Help:    "Time to fetch a source, successful or not.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"source"}),
		fetchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "legate_source_fetch_errors_total",
			Help: "Fetches of a source that failed.",
		}, []string{"source"}),
	}
	reg.MustRegister(m.fetchDuration, m.fetchErrors)
	return m
}
