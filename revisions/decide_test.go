package revisions

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/legate-dev/legate/render"
)

func TestChoose(t *testing.T) {
	c := func(hash string, tainted bool) candidate { return candidate{Hash: hash, Tainted: tainted} }
	tests := []struct {
		name    string
		history []candidate
		want    choice
	}{
		{"empty history publishes nothing", nil, choice{}},
		{"single good revision is in sync", []candidate{c("a", false)}, choice{Hash: "a", State: StateInSync}},
		{"newest good revision wins", []candidate{c("b", false), c("a", false)}, choice{Hash: "b", State: StateInSync}},
		{"newest tainted rolls back to the previous", []candidate{c("b", true), c("a", false)}, choice{Hash: "a", State: StateRollback}},
		{"skips every tainted revision", []candidate{c("d", true), c("c", true), c("b", false), c("a", true)}, choice{Hash: "b", State: StateRollback}},
		{"all tainted is rollback failed and changes nothing", []candidate{c("b", true), c("a", true)}, choice{State: StateRollbackFailed}},
		{"single tainted is rollback failed", []candidate{c("a", true)}, choice{State: StateRollbackFailed}},
		{"older tainted entries do not matter", []candidate{c("c", false), c("b", true)}, choice{Hash: "c", State: StateInSync}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, choose(tt.history))
		})
	}
}

func TestPlanPublish(t *testing.T) {
	tests := []struct {
		name             string
		c                choice
		published        string
		publishedTainted bool
		force            bool
		want             publishPlan
	}{
		{"nothing chosen", choice{State: StateRollbackFailed}, "a", true, false, publishPlan{}},
		{"nothing chosen even when forced", choice{}, "", false, true, publishPlan{}},
		{"first publication", choice{Hash: "a", State: StateInSync}, "", false, false, publishPlan{Publish: true, Hash: "a"}},
		{"already served", choice{Hash: "a", State: StateInSync}, "a", false, false, publishPlan{}},
		{"new content keeps unchanged types", choice{Hash: "b", State: StateInSync}, "a", false, false, publishPlan{Publish: true, Hash: "b"}},
		{"rollback is fresh", choice{Hash: "a", State: StateRollback}, "b", true, false, publishPlan{Publish: true, Hash: "a", Fresh: true}},
		{"moving off a tainted publication is fresh", choice{Hash: "c", State: StateInSync}, "b", true, false, publishPlan{Publish: true, Hash: "c", Fresh: true}},
		{"forced re-publication is fresh", choice{Hash: "a", State: StateInSync}, "a", false, true, publishPlan{Publish: true, Hash: "a", Fresh: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, planPublish(tt.c, tt.published, tt.publishedTainted, tt.force))
		})
	}
}

func TestMoveToTop(t *testing.T) {
	tests := []struct {
		name    string
		history []string
		hash    string
		want    []string
	}{
		{"into empty history", nil, "a", []string{"a"}},
		{"new on top", []string{"b", "a"}, "c", []string{"c", "b", "a"}},
		{"old content moves up", []string{"c", "b", "a"}, "a", []string{"a", "c", "b"}},
		{"top stays", []string{"c", "b", "a"}, "c", []string{"c", "b", "a"}},
		{"middle moves up", []string{"c", "b", "a"}, "b", []string{"b", "c", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]string(nil), tt.history...)
			assert.Equal(t, tt.want, moveToTop(tt.history, tt.hash))
			assert.Equal(t, in, tt.history, "input must not change")
		})
	}
}

func TestPrune(t *testing.T) {
	tests := []struct {
		name      string
		history   []string
		published string
		limit     int
		keep      []string
		drop      []string
	}{
		{"under the limit", []string{"b", "a"}, "b", 3, []string{"b", "a"}, nil},
		{"at the limit", []string{"c", "b", "a"}, "c", 3, []string{"c", "b", "a"}, nil},
		{"over the limit drops the oldest", []string{"d", "c", "b", "a"}, "d", 2, []string{"d", "c"}, []string{"b", "a"}},
		{"published beyond the limit is kept", []string{"d", "c", "b", "a"}, "b", 2, []string{"d", "c", "b"}, []string{"a"}},
		{"limit below one keeps one", []string{"b", "a"}, "b", 0, []string{"b"}, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep, drop := prune(tt.history, tt.published, tt.limit)
			assert.Equal(t, tt.keep, keep)
			assert.Equal(t, tt.drop, drop)
		})
	}
}

func TestAssignVersions(t *testing.T) {
	const (
		lds = "type.googleapis.com/envoy.config.listener.v3.Listener"
		cds = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
		rds = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	)
	cfg := &render.NodeConfig{Hash: "0123456789abcdef", Types: map[string]render.TypeSet{
		lds: {Hash: "1111111111111111"},
		cds: {Hash: "2222222222222222"},
	}}
	tests := []struct {
		name        string
		prev        map[string]TypeVersion
		fresh       bool
		wantVersion string
		want        map[string]TypeVersion
	}{
		{
			name:        "first publication",
			wantVersion: "0123456789ab-7",
			want: map[string]TypeVersion{
				lds: {Version: "111111111111-7", Hash: "1111111111111111"},
				cds: {Version: "222222222222-7", Hash: "2222222222222222"},
			},
		},
		{
			name: "unchanged type keeps its version",
			prev: map[string]TypeVersion{
				lds: {Version: "111111111111-3", Hash: "1111111111111111"},
				cds: {Version: "999999999999-5", Hash: "9999999999999999"},
			},
			wantVersion: "0123456789ab-7",
			want: map[string]TypeVersion{
				lds: {Version: "111111111111-3", Hash: "1111111111111111"},
				cds: {Version: "222222222222-7", Hash: "2222222222222222"},
			},
		},
		{
			name: "fresh renews every type",
			prev: map[string]TypeVersion{
				lds: {Version: "111111111111-3", Hash: "1111111111111111"},
				cds: {Version: "222222222222-5", Hash: "2222222222222222"},
			},
			fresh:       true,
			wantVersion: "0123456789ab-7",
			want: map[string]TypeVersion{
				lds: {Version: "111111111111-7", Hash: "1111111111111111"},
				cds: {Version: "222222222222-7", Hash: "2222222222222222"},
			},
		},
		{
			name:        "a removed type is published empty",
			prev:        map[string]TypeVersion{rds: {Version: "x-1", Hash: "x"}},
			wantVersion: "0123456789ab-7",
			want: map[string]TypeVersion{
				lds: {Version: "111111111111-7", Hash: "1111111111111111"},
				cds: {Version: "222222222222-7", Hash: "2222222222222222"},
				rds: {Version: "empty-7"},
			},
		},
		{
			name:        "a type still empty keeps its version",
			prev:        map[string]TypeVersion{rds: {Version: "empty-4"}},
			wantVersion: "0123456789ab-7",
			want: map[string]TypeVersion{
				lds: {Version: "111111111111-7", Hash: "1111111111111111"},
				cds: {Version: "222222222222-7", Hash: "2222222222222222"},
				rds: {Version: "empty-4"},
			},
		},
		{
			name:        "an empty type gets a fresh version on rollback",
			prev:        map[string]TypeVersion{rds: {Version: "empty-4"}},
			fresh:       true,
			wantVersion: "0123456789ab-7",
			want: map[string]TypeVersion{
				lds: {Version: "111111111111-7", Hash: "1111111111111111"},
				cds: {Version: "222222222222-7", Hash: "2222222222222222"},
				rds: {Version: "empty-7"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, types := assignVersions(cfg, tt.prev, 7, tt.fresh)
			assert.Equal(t, tt.wantVersion, v)
			assert.Equal(t, tt.want, types)
		})
	}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name      string
		t         tally
		threshold float64
		timedOut  bool
		want      verdict
	}{
		{"nobody connected", tally{}, 1, false, verdictPending},
		{"nobody connected after the timeout", tally{}, 1, true, verdictPending},
		{"waiting for answers", tally{Population: 2, Accepted: 1}, 1, false, verdictPending},
		{"all accepted", tally{Population: 2, Accepted: 2}, 1, false, verdictAccepted},
		{"all rejected taints", tally{Population: 2, Rejected: 2}, 1, false, verdictTainted},
		{"single proxy rejected taints", tally{Population: 1, Rejected: 1}, 1, false, verdictTainted},
		{"some rejected is degraded", tally{Population: 2, Accepted: 1, Rejected: 1}, 1, false, verdictDegraded},
		{"rejection waits for the others", tally{Population: 2, Rejected: 1}, 0.5, false, verdictPending},
		{"half rejected reaches a half threshold", tally{Population: 2, Accepted: 1, Rejected: 1}, 0.5, false, verdictTainted},
		{"two of three reaches two thirds", tally{Population: 3, Accepted: 1, Rejected: 2}, 2.0 / 3.0, false, verdictTainted},
		// 0.07*100 is 7.000000000000001 in float64: without the epsilon
		// 7 rejections of 100 would fall short of a 7 % threshold.
		{"seven of a hundred reaches 7 %", tally{Population: 100, Accepted: 93, Rejected: 7}, 0.07, false, verdictTainted},
		{"fifty-five of a hundred reaches 55 %", tally{Population: 100, Accepted: 45, Rejected: 55}, 0.55, false, verdictTainted},
		{"six of a hundred stays under 7 %", tally{Population: 100, Accepted: 94, Rejected: 6}, 0.07, false, verdictDegraded},
		{"one of three misses two thirds", tally{Population: 3, Accepted: 2, Rejected: 1}, 2.0 / 3.0, false, verdictDegraded},
		{"timeout judges a silent proxy as not rejecting", tally{Population: 2, Rejected: 1}, 1, true, verdictDegraded},
		{"timeout taints when the share is reached", tally{Population: 2, Rejected: 1}, 0.5, true, verdictTainted},
		{"timeout with some acceptances is accepted", tally{Population: 3, Accepted: 1}, 1, true, verdictAccepted},
		{"timeout with only silence stays pending", tally{Population: 3}, 1, true, verdictPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, judge(tt.t, tt.threshold, tt.timedOut))
		})
	}
}

func TestCombineState(t *testing.T) {
	tests := []struct {
		base State
		v    verdict
		want State
	}{
		{StateInSync, verdictPending, StatePending},
		{StateInSync, verdictAccepted, StateInSync},
		{StateInSync, verdictDegraded, StateDegraded},
		{StateRollback, verdictPending, StateRollback},
		{StateRollback, verdictAccepted, StateRollback},
		{StateRollback, verdictDegraded, StateRollback},
		{StateRollbackFailed, verdictTainted, StateRollbackFailed},
		{StateRollbackFailed, verdictAccepted, StateRollbackFailed},
	}
	for _, tt := range tests {
		t.Run(string(tt.base)+"/"+tt.v.String(), func(t *testing.T) {
			assert.Equal(t, tt.want, combineState(tt.base, tt.v))
		})
	}
}

func TestTaintMessage(t *testing.T) {
	tests := []struct {
		name       string
		rejected   []ProxyRejection
		population int
		want       string
	}{
		{"none", nil, 2, ""},
		{"one", []ProxyRejection{{Proxy: "pod-a", Error: "unsupported cluster type"}}, 1, "rejected by 1 of 1 proxies; pod-a: unsupported cluster type"},
		{
			"several are sorted",
			[]ProxyRejection{{Proxy: "pod-b", Error: "e2"}, {Proxy: "pod-a", Error: "e1"}, {Proxy: "pod-c", Error: "e3"}},
			4,
			"rejected by 3 of 4 proxies; pod-a: e1 (and 2 more)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, taintMessage(tt.rejected, tt.population))
		})
	}
}
