package core

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTuningProblemsNameFieldAndFlag(t *testing.T) {
	for _, tc := range []struct {
		tuning Tuning
		want   string
	}{
		{Tuning{History: -1}, "history (--history): must be at least 1, got -1"},
		{Tuning{TaintThreshold: -0.1}, "taintThreshold (--taint-threshold): must be in (0, 1]"},
		{Tuning{TaintThreshold: 1.5}, "taintThreshold (--taint-threshold): must be in (0, 1], got 1.5"},
		{Tuning{AnswerTimeout: -time.Second}, "answerTimeout (--answer-timeout): must not be negative"},
		{Tuning{StatusMaxBackoff: time.Hour}, "statusMaxBackoff (--status-max-backoff): must be in (0, 5m0s], got 1h0m0s"},
		{Tuning{StatusMaxBackoff: -time.Second}, "statusMaxBackoff (--status-max-backoff)"},
		{Tuning{LogFormat: "xml"}, `logFormat (--log-format): log format "xml": want one of text, json`},
		{Tuning{LogLevel: "loud"}, `logLevel (--log-level): log level "loud": want one of debug, info, warn, error`},
		{Tuning{XDSMaxConnections: -1}, "xdsMaxConnections (--xds-max-connections): must be at least 1, got -1"},
		{Tuning{XDSTransport: "h3"}, `xdsTransport (--xds-transport): must be "lean" or "grpc", got "h3"`},
	} {
		err := tc.tuning.Validate()
		require.Error(t, err, "%+v", tc.tuning)
		assert.Contains(t, err.Error(), tc.want)
	}
	assert.NoError(t, Tuning{}.Validate(), "zero values are the defaults")
	assert.NoError(t, Defaults().Validate())
	assert.Len(t, Tuning{History: -1, TaintThreshold: 2}.Problems(), 2, "every problem at once")
}

// AddFlags registers every knob, with Defaults as the flag defaults, and
// Override copies only the flags that were given.
func TestAddFlagsAndOverride(t *testing.T) {
	var flags Tuning
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	flags.AddFlags(fs)
	for _, k := range Knobs {
		assert.NotNil(t, fs.Lookup(k.Flag), "--%s is registered", k.Flag)
	}
	assert.Equal(t, Defaults(), flags, "flag defaults are Defaults()")

	require.NoError(t, fs.Parse([]string{"--history=4", "--status-max-backoff=20s", "--xds-insecure", "--log-format=json"}))
	fromFile := Tuning{History: 7, TaintThreshold: 0.5, StatusMaxBackoff: time.Minute, LogLevel: "warn"}
	fromFile.Override(flags, fs.Changed)
	assert.Equal(t, Tuning{History: 4, TaintThreshold: 0.5, StatusMaxBackoff: 20 * time.Second, XDSInsecure: true, LogFormat: "json", LogLevel: "warn"}, fromFile,
		"flags given win, the file's other fields stay")
}

func TestLoggerNamesTheKnob(t *testing.T) {
	_, err := Tuning{LogLevel: "loud"}.Logger(&strings.Builder{})
	assert.ErrorContains(t, err, "--log-level")
	var out strings.Builder
	log, err := Tuning{LogFormat: "json"}.Logger(&out)
	require.NoError(t, err)
	log.Info("hello")
	assert.Contains(t, out.String(), `"msg":"hello"`)
}

// The one xDS rule, fed with what each home knows: standalone has TLS
// files and a client CA; the Kubernetes home has those files or its own
// PKI (which is mutual TLS).
func TestCheckXDSExposure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sec      XDSSecurity
		insecure bool
		want     string // "" allowed
	}{
		{"loopback plaintext", XDSSecurity{Addr: "127.0.0.1:18000"}, false, ""},
		{"localhost plaintext", XDSSecurity{Addr: "localhost:18000"}, false, ""},
		{"ipv6 loopback", XDSSecurity{Addr: "[::1]:18000"}, false, ""},
		{"every address plaintext", XDSSecurity{Addr: ":18000"}, false, "over plaintext"},
		{"every address, TLS without client CA", XDSSecurity{Addr: "0.0.0.0:18000", TLS: true}, false, "over TLS without client certificates"},
		{"LAN mutual TLS (files, or the controller's PKI)", XDSSecurity{Addr: "10.0.0.5:18000", TLS: true, MutualTLS: true}, false, ""},
		{"a name", XDSSecurity{Addr: "legate-xds.legate-system.svc:18000"}, false, "reaches beyond loopback without mutual TLS"},
		{"opt-in", XDSSecurity{Addr: "0.0.0.0:18000"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Tuning{XDSInsecure: tc.insecure}.CheckXDSExposure(tc.sec)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "xdsAddr (--xds-addr) "+tc.sec.Addr, "names the field and the flag")
			assert.Contains(t, err.Error(), "--xds-insecure", "names the one escape hatch")
			assert.Contains(t, err.Error(), "--xds-client-ca")
		})
	}
}

func TestXDSExposureWarning(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 18000}
	all := &net.TCPAddr{IP: net.IPv4zero, Port: 18000}
	assert.Empty(t, XDSExposureWarning(loop, XDSSecurity{}))
	assert.Empty(t, XDSExposureWarning(all, XDSSecurity{TLS: true, MutualTLS: true}))
	assert.Contains(t, XDSExposureWarning(all, XDSSecurity{}), "xDS is served on 0.0.0.0:18000 over plaintext")
	assert.Contains(t, XDSExposureWarning(all, XDSSecurity{TLS: true}), "over TLS without client certificates")
}
