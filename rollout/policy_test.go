package rollout

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const issueExample = `
steps:
  - proxies: 10%
  - pause: 30s
  - nodes: ["edge-canary-*"]
  - proxies: 50%
  - pause: {}
analysis: {interval: 1m, count: 3}
onFailure: rollback
`

func compileYAML(t *testing.T, doc string) (*Plan, error) {
	t.Helper()
	var p Policy
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &p))
	return p.Compile("rollout")
}

func TestCompileIssueExample(t *testing.T) {
	plan, err := compileYAML(t, issueExample)
	require.NoError(t, err)
	assert.Equal(t, []PlanStep{
		{Kind: StepProxies, Share: 1000},
		{Kind: StepPause, Pause: 30 * time.Second},
		{Kind: StepNodes, Globs: []string{"edge-canary-*"}},
		{Kind: StepProxies, Share: 5000},
		{Kind: StepPause, Untimed: true},
	}, plan.Steps)
	assert.Equal(t, DefaultAckTimeout, plan.AckTimeout)
	assert.Equal(t, DefaultMaxRestarts, plan.MaxRestarts)
	assert.Equal(t, OnFailureRollback, plan.OnFailure)
	assert.JSONEq(t, `{"interval":"1m","count":3}`, string(plan.Analysis))
}

func TestPolicyRoundTrip(t *testing.T) {
	var p Policy
	require.NoError(t, yaml.UnmarshalStrict([]byte(issueExample), &p))
	js, err := json.Marshal(p)
	require.NoError(t, err)
	var back Policy
	require.NoError(t, json.Unmarshal(js, &back))
	a, err := p.Compile("")
	require.NoError(t, err)
	b, err := back.Compile("")
	require.NoError(t, err, string(js))
	assert.Equal(t, a, b)
}

func TestCompileErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"over 100", "steps: [{proxies: 10%}, {pause: 1s}, {proxies: 110%}]", `rollout.steps[2].proxies: "110%" is not a percentage between 0 and 100`},
		{"no percent sign", "steps: [{proxies: 10}]", `rollout.steps[0].proxies: "10" is not a percentage between 0 and 100`},
		{"negative", "steps: [{proxies: -5%}]", `rollout.steps[0].proxies: "-5%" is not a percentage`},
		{"three decimals", "steps: [{proxies: 0.125%}]", `rollout.steps[0].proxies: "0.125%" has more than two decimals`},
		{"decreasing", "steps: [{proxies: 50%}, {proxies: 10%}]", `rollout.steps[1].proxies: 10% is less than the 50% of an earlier step`},
		{"two kinds", "steps: [{proxies: 10%, pause: 1s}]", `rollout.steps[0]: a step sets exactly one of proxies, nodes and pause`},
		{"empty step", "steps: [{}]", `rollout.steps[0]: a step sets exactly one`},
		{"no steps", "onFailure: pause", `rollout.steps: a rollout needs at least one step`},
		{"bad pause", "steps: [{pause: soon}]", `rollout.steps[0].pause: "soon" is not a duration`},
		{"zero pause", "steps: [{pause: 0s}]", `rollout.steps[0].pause: "0s" must be positive`},
		{"bad glob", `steps: [{nodes: ["edge-[", "x"]}]`, `rollout.steps[0].nodes[0]: "edge-[" is not a valid glob`},
		{"empty glob list", `steps: [{nodes: []}]`, `rollout.steps[0].nodes: give node ID globs or a percentage`},
		{"bad node share", `steps: [{nodes: "all"}]`, `rollout.steps[0].nodes: "all" is not a percentage`},
		{"bad ackTimeout", "steps: [{proxies: 1%}]\nackTimeout: 0s", `rollout.ackTimeout: "0s" must be positive`},
		{"bad soak", "steps: [{proxies: 1%}]\nsoak: forever", `rollout.soak: "forever" is not a duration`},
		{"bad restarts", "steps: [{proxies: 1%}]\nmaxRestarts: -1", `rollout.maxRestarts: -1 is not between 0 and 1000`},
		{"bad onFailure", "steps: [{proxies: 1%}]\nonFailure: retry", `rollout.onFailure: "retry" is neither "rollback" nor "pause"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compileYAML(t, tc.doc)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestCompileBounds(t *testing.T) {
	p := Policy{Steps: make([]Step, MaxSteps+1)}
	_, err := p.Compile("sources[0].rollout")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sources[0].rollout.steps: 51 steps, over the limit of 50")
	long := Text(strings.Repeat("x", 10000))
	p = Policy{Steps: []Step{{Proxies: &long}}}
	_, err = p.Compile("")
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 200, "a user's value is echoed bounded")
}

func TestSelectsNode(t *testing.T) {
	plan, err := compileYAML(t, `steps: [{nodes: ["edge-canary-*", "solo"]}, {nodes: "50%"}, {nodes: "0%"}]`)
	require.NoError(t, err)
	assert.True(t, plan.Steps[0].SelectsNode("edge-canary-1"))
	assert.True(t, plan.Steps[0].SelectsNode("solo"))
	assert.False(t, plan.Steps[0].SelectsNode("edge-1"))
	assert.False(t, plan.Steps[2].SelectsNode("edge-1"))
	in := 0
	for i := range 1000 {
		if plan.Steps[1].SelectsNode("node-" + strconv.Itoa(i)) {
			in++
		}
	}
	assert.InDelta(t, 500, in, 60)
}

// The Kubernetes API writes a share of nodes as a list of one percentage
// (a CRD field has one type); it means the share, not a glob.
func TestNodeShareAsAListOfOne(t *testing.T) {
	plan, err := compileYAML(t, "steps: [{nodes: [\"25%\"]}, {nodes: 50%}, {nodes: [\"edge-*\", \"core-*\"]}]")
	require.NoError(t, err)
	assert.Equal(t, []PlanStep{
		{Kind: StepNodes, Share: 2500},
		{Kind: StepNodes, Share: 5000},
		{Kind: StepNodes, Globs: []string{"edge-*", "core-*"}},
	}, plan.Steps)
}
