package kubestore

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/config/v1alpha1"
)

func TestSetConditions(t *testing.T) {
	t.Parallel()
	t0 := metav1.NewTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	taint := &v1alpha1.RevisionTaint{Message: "rejected by 1 of 1 proxies: cluster c: bad"}
	type want struct{ status, reason string }
	for _, tc := range []struct {
		name                   string
		st                     v1alpha1.EnvoyConfigRevisionStatus
		previous               []metav1.Condition
		published, tainted     want
		marin3rPub, marin3rTnt want
	}{
		{
			name:      "new, not served yet",
			published: want{"False", ReasonNotPublished}, tainted: want{"False", ReasonNotTainted},
			marin3rPub: want{"False", ReasonNotPublished}, marin3rTnt: want{"False", ReasonNotTainted},
		},
		{
			name: "served", st: v1alpha1.EnvoyConfigRevisionStatus{Published: true, LastPublishedAt: &t0},
			published: want{"True", ReasonPublished}, tainted: want{"False", ReasonNotTainted},
			marin3rPub: want{"True", "VersionPublished"}, marin3rTnt: want{"False", ReasonNotTainted},
		},
		{
			name: "superseded", st: v1alpha1.EnvoyConfigRevisionStatus{LastPublishedAt: &t0},
			published: want{"False", ReasonSuperseded}, tainted: want{"False", ReasonNotTainted},
			marin3rPub: want{"False", ReasonSuperseded}, marin3rTnt: want{"False", ReasonNotTainted},
		},
		{
			name: "tainted, still served (all revisions tainted)", st: v1alpha1.EnvoyConfigRevisionStatus{Published: true, Tainted: true, Taint: taint},
			published: want{"True", ReasonPublished}, tainted: want{"True", ReasonRejected},
			marin3rPub: want{"True", "VersionPublished"}, marin3rTnt: want{"True", "ResourcesFailing"},
		},
		{
			name: "tainted and rolled back", st: v1alpha1.EnvoyConfigRevisionStatus{Tainted: true, Taint: taint, LastPublishedAt: &t0},
			published: want{"False", ReasonTainted}, tainted: want{"True", ReasonRejected},
			marin3rPub: want{"False", ReasonTainted}, marin3rTnt: want{"True", "ResourcesFailing"},
		},
		{
			name: "untainted", st: v1alpha1.EnvoyConfigRevisionStatus{LastPublishedAt: &t0},
			previous:  []metav1.Condition{{Type: v1alpha1.ConditionTainted, Status: metav1.ConditionTrue, Reason: ReasonRejected, LastTransitionTime: t0}},
			published: want{"False", ReasonSuperseded}, tainted: want{"False", ReasonUntainted},
			marin3rPub: want{"False", ReasonSuperseded}, marin3rTnt: want{"False", ReasonUntainted},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st
			setConditions(&st, tc.previous, "edge", 3, t1)
			require.Len(t, st.Conditions, 4)
			for typ, w := range map[string]want{
				v1alpha1.ConditionPublished: tc.published, v1alpha1.ConditionTainted: tc.tainted,
				v1alpha1.MARIN3RRevisionPublished: tc.marin3rPub, v1alpha1.MARIN3RRevisionTainted: tc.marin3rTnt,
			} {
				c := meta.FindStatusCondition(st.Conditions, typ)
				require.NotNil(t, c, typ)
				assert.Equal(t, w.status, string(c.Status), typ)
				assert.Equal(t, w.reason, c.Reason, typ)
				assert.NotEmpty(t, c.Message, typ)
				assert.Equal(t, int64(3), c.ObservedGeneration, typ)
			}
			if st.Tainted {
				assert.Equal(t, taint.Message, meta.FindStatusCondition(st.Conditions, v1alpha1.MARIN3RRevisionTainted).Message, "the proxies' own words")
			}
		})
	}
}

// lastTransitionTime moves only when a condition's status does; reason,
// message and observedGeneration follow every write; other controllers'
// conditions are kept.
func TestSetConditionsTransitions(t *testing.T) {
	t.Parallel()
	t0 := metav1.NewTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	t1, t2 := metav1.NewTime(t0.Add(time.Minute)), metav1.NewTime(t0.Add(2*time.Minute))
	other := metav1.Condition{Type: "Audited", Status: metav1.ConditionTrue, Reason: "ByHand", LastTransitionTime: t0}
	st := v1alpha1.EnvoyConfigRevisionStatus{Published: true, LastPublishedAt: &t0}
	setConditions(&st, []metav1.Condition{other}, "edge", 1, t0)

	st.Taint, st.Tainted = &v1alpha1.RevisionTaint{Message: "bad"}, true
	setConditions(&st, st.Conditions, "edge", 2, t1)
	assert.Equal(t, t0, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionPublished).LastTransitionTime, "still True")
	assert.Equal(t, int64(2), meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionPublished).ObservedGeneration)
	assert.Equal(t, t1, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionTainted).LastTransitionTime, "False → True")
	assert.Equal(t, t1, meta.FindStatusCondition(st.Conditions, v1alpha1.MARIN3RRevisionTainted).LastTransitionTime)

	st.Published = false
	setConditions(&st, st.Conditions, "edge", 2, t2)
	assert.Equal(t, t2, meta.FindStatusCondition(st.Conditions, v1alpha1.MARIN3RRevisionPublished).LastTransitionTime, "True → False")
	assert.Equal(t, t1, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionTainted).LastTransitionTime, "still True")
	assert.Equal(t, &other, meta.FindStatusCondition(st.Conditions, "Audited"), "not ours: kept")

	st.Taint, st.Tainted = nil, false
	setConditions(&st, st.Conditions, "edge", 2, t2)
	st.Published = true
	setConditions(&st, st.Conditions, "edge", 2, t2)
	assert.Equal(t, ReasonUntainted, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionTainted).Reason, "still cleared after the next write")
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "short", truncate("short", 10))
	long := strings.Repeat("é", 1000) // 2 bytes each
	got := truncate(long, maxConditionMessage)
	assert.LessOrEqual(t, len(got), maxConditionMessage)
	assert.True(t, utf8.ValidString(got))
	assert.True(t, strings.HasSuffix(got, "…"))
}
