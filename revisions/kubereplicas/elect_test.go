package kubereplicas

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Elect campaigns for the Lease of the controller's namespace under the
// replica's name, with the timing asked and controller-runtime's defaults
// for the rest.
func TestElect(t *testing.T) {
	var mopts manager.Options
	// No API server is reached: the lock is only built.
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	require.NoError(t, Elect(&mopts, cfg, "legate-system", "replica-a", Timing{RenewDeadline: 3 * time.Second}))
	assert.True(t, mopts.LeaderElection)
	assert.True(t, mopts.LeaderElectionReleaseOnCancel, "a stopping leader hands over at once")
	assert.Equal(t, LeaseName, mopts.LeaderElectionID)
	assert.Equal(t, "legate-system", mopts.LeaderElectionNamespace)
	require.NotNil(t, mopts.LeaderElectionResourceLockInterface)
	assert.Equal(t, "replica-a", mopts.LeaderElectionResourceLockInterface.Identity())
	require.NotNil(t, mopts.RenewDeadline)
	assert.Equal(t, 3*time.Second, *mopts.RenewDeadline)
	assert.Nil(t, mopts.LeaseDuration, "left to the default")
	assert.Nil(t, mopts.RetryPeriod, "left to the default")
}
