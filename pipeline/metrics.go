package pipeline

import "github.com/prometheus/client_golang/prometheus"

// metrics of the renders. Labels are source names: bounded by the
// configuration.
type metrics struct {
	renderDuration *prometheus.HistogramVec
	renderFailures *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		renderDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "legate_render_duration_seconds",
			Help:    "Time to render and validate a source's configuration.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"source"}),
		renderFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "legate_render_failures_total",
			Help: "Renders of a source rejected by validation.",
		}, []string{"source"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.renderDuration, m.renderFailures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
