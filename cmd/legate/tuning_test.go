package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/core"
)

// tuningArgs sets every knob both homes share to a value other than its
// default.
var tuningArgs = []string{
	"--history", "4", "--taint-threshold", "0.5", "--answer-timeout", "12s",
	"--status-max-backoff", "45s", "--xds-insecure", "--log-format", "json", "--log-level", "warn",
	"--xds-max-connections", "60000", "--xds-transport", "grpc",
}

// Both homes accept the same tuning flags, with the same defaults, help
// and meaning: they are registered once (core.Tuning.AddFlags).
func TestBothHomesAcceptTheSameTuningFlags(t *testing.T) {
	serve, ctl := newServeCommand(), newControllerCommand()
	for _, k := range core.Knobs {
		s, c := serve.Flags().Lookup(k.Flag), ctl.Flags().Lookup(k.Flag)
		require.NotNil(t, s, "legate serve --%s", k.Flag)
		require.NotNil(t, c, "legate controller --%s", k.Flag)
		assert.Equal(t, s.DefValue, c.DefValue, "--%s default", k.Flag)
		assert.Equal(t, s.Usage, c.Usage, "--%s help", k.Flag)
	}
	require.NoError(t, serve.Flags().Parse(tuningArgs))
	require.NoError(t, ctl.Flags().Parse(tuningArgs))
	for _, k := range core.Knobs {
		assert.Equal(t, serve.Flags().Lookup(k.Flag).Value.String(), ctl.Flags().Lookup(k.Flag).Value.String(), "--%s parses alike", k.Flag)
	}
}

// In legate serve the tuning flags win over the config file's fields, and
// an unset flag keeps the file's value.
func TestServeTuningFlagsOverTheConfigFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "legate.yaml")
	require.NoError(t, os.WriteFile(file, []byte("sources:\n- name: cfg\n  git: {url: /srv/cfg}\nhistory: 7\nstatusMaxBackoff: 20s\nlogLevel: debug\nxdsMaxConnections: 70000\n"), 0o600))
	var f serveFlags
	fl := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f.bind(fl)
	require.NoError(t, fl.Parse([]string{"--config", file, "--history", "4", "--xds-insecure"}))
	cfg, err := f.config(fl)
	require.NoError(t, err)
	assert.Equal(t, core.Tuning{History: 4, StatusMaxBackoff: 20 * time.Second, XDSInsecure: true, LogLevel: "debug", XDSMaxConnections: 70000}, cfg.Tuning())

	// Without a file, every flag's value (its default when unset) holds.
	var g serveFlags
	gl := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	g.bind(gl)
	require.NoError(t, gl.Parse(append([]string{"--source", "name=a,git=/r"}, tuningArgs...)))
	cfg, err = g.config(gl)
	require.NoError(t, err)
	assert.Equal(t, core.Tuning{History: 4, TaintThreshold: 0.5, AnswerTimeout: 12 * time.Second, StatusMaxBackoff: 45 * time.Second, XDSInsecure: true, LogFormat: "json", LogLevel: "warn", XDSMaxConnections: 60000, XDSTransport: "grpc"}, cfg.Tuning())
}

// A bad knob is refused by both homes, naming the field and the flag.
func TestBothHomesRefuseABadKnob(t *testing.T) {
	for _, home := range []string{"serve", "controller"} {
		_, err := runLegate(t, home, "--taint-threshold", "2", "--state-dir", t.TempDir())
		assert.ErrorContains(t, err, "taintThreshold (--taint-threshold): must be in (0, 1], got 2", home)
	}
}
