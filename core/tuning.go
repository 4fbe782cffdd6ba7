package core

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/logging"
	"github.com/legate-dev/legate/readapi"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/xds"
)

// DefaultStatusMaxBackoff caps the wait between two attempts to deliver a
// commit status in both homes. An author waiting for a check expects it
// within seconds to a minute of the forge coming back from an outage, not
// forge.MaxBackoff's five minutes; yet a Kubernetes home may hold hundreds
// of sources, each retried on its own, and 30 s keeps a recovering forge
// (and a GitHub token's hourly budget) from being hammered the way a 10 s
// cap across that many targets would.
const DefaultStatusMaxBackoff = 30 * time.Second

// maxStatusBackoff is the dispatcher's own cap, which no setting exceeds.
const maxStatusBackoff = forge.MaxBackoff

// Tuning holds every knob both homes share. The zero value of a field
// means its default (see Defaults); AddFlags registers all of them once,
// for `legate serve` and `legate controller` alike, and standalone's
// config file spells the same fields (Field names them).
type Tuning struct {
	// History bounds each node's revision history.
	History int
	// TaintThreshold is the share of a node's proxies that must reject a
	// revision to taint it, in (0, 1].
	TaintThreshold float64
	// AnswerTimeout is how long to wait for every proxy's answer before a
	// revision is judged on the answers at hand.
	AnswerTimeout time.Duration
	// StatusMaxBackoff caps the wait between two attempts to deliver a
	// commit status (at most forge.MaxBackoff).
	StatusMaxBackoff time.Duration
	// XDSInsecure allows serving xDS beyond loopback without mutual TLS
	// (see CheckXDSExposure).
	XDSInsecure bool
	// LogFormat ("text" or "json") and LogLevel ("debug", "info", "warn",
	// "error") shape the logger (see Logger).
	LogFormat, LogLevel string
	// ReadTokenFile, when set, holds a token every read of the HTTP API
	// (status page, API, metrics) must carry; the probes stay open (see
	// ReadTokens).
	ReadTokenFile string
	// XDSMaxConnections bounds the client connections the xDS listener
	// holds open; one more is reset at accept (see ListenXDS).
	XDSMaxConnections int
	// XDSTransport is what carries ADS: XDSTransportLean (legate's own,
	// the default) or XDSTransportGRPC (grpc-go's server), see
	// NewXDSServer.
	XDSTransport string
}

// The transports of XDSTransport.
const (
	XDSTransportLean = "lean"
	XDSTransportGRPC = "grpc"
)

// Defaults is the Tuning both homes run with unless told otherwise.
func Defaults() Tuning {
	return Tuning{
		History:           revisions.DefaultHistory,
		TaintThreshold:    revisions.DefaultThreshold,
		AnswerTimeout:     revisions.DefaultTimeout,
		StatusMaxBackoff:  DefaultStatusMaxBackoff,
		LogFormat:         "text",
		LogLevel:          "info",
		XDSMaxConnections: xds.DefaultMaxConnections,
		XDSTransport:      XDSTransportLean,
	}
}

// Knob names one tuning field as a flag and as a config-file field.
type Knob struct{ Flag, Field string }

// The knobs, in the order AddFlags registers them.
var (
	KnobHistory           = Knob{"history", "history"}
	KnobTaintThreshold    = Knob{"taint-threshold", "taintThreshold"}
	KnobAnswerTimeout     = Knob{"answer-timeout", "answerTimeout"}
	KnobStatusMaxBackoff  = Knob{"status-max-backoff", "statusMaxBackoff"}
	KnobXDSInsecure       = Knob{"xds-insecure", "xdsInsecure"}
	KnobLogFormat         = Knob{"log-format", "logFormat"}
	KnobLogLevel          = Knob{"log-level", "logLevel"}
	KnobReadTokenFile     = Knob{"read-token-file", "readTokenFile"}
	KnobXDSMaxConnections = Knob{"xds-max-connections", "xdsMaxConnections"}
	KnobXDSTransport      = Knob{"xds-transport", "xdsTransport"}
)

// Knobs lists every knob of Tuning.
var Knobs = []Knob{KnobHistory, KnobTaintThreshold, KnobAnswerTimeout, KnobStatusMaxBackoff, KnobXDSInsecure, KnobLogFormat, KnobLogLevel, KnobReadTokenFile, KnobXDSMaxConnections, KnobXDSTransport}

// String names the knob both ways, so that an error reads right whether
// the value came from a flag or the config file.
func (k Knob) String() string { return k.Field + " (--" + k.Flag + ")" }

// AddFlags registers every knob on fs, bound to t, with Defaults as the
// defaults. Both `legate serve` and `legate controller` call it, so the
// two homes accept the same flags with the same meaning.
func (t *Tuning) AddFlags(fs *pflag.FlagSet) {
	d := Defaults()
	fs.IntVar(&t.History, KnobHistory.Flag, d.History, "revisions kept per node")
	fs.Float64Var(&t.TaintThreshold, KnobTaintThreshold.Flag, d.TaintThreshold, "share of a node's proxies that must reject a revision to taint it, in (0, 1]")
	fs.DurationVar(&t.AnswerTimeout, KnobAnswerTimeout.Flag, d.AnswerTimeout, "how long to wait for every proxy to answer a new revision before judging it on the answers at hand")
	fs.DurationVar(&t.StatusMaxBackoff, KnobStatusMaxBackoff.Flag, d.StatusMaxBackoff, "longest wait between two attempts to deliver a commit status while the forge fails (at most 5m)")
	fs.BoolVar(&t.XDSInsecure, KnobXDSInsecure.Flag, false, "allow serving xDS beyond loopback without mutual TLS: anyone who reaches it may fetch every node's configuration and answer for its proxies")
	fs.StringVar(&t.LogFormat, KnobLogFormat.Flag, d.LogFormat, "log format: "+strings.Join(logging.Formats, " or "))
	fs.StringVar(&t.LogLevel, KnobLogLevel.Flag, d.LogLevel, "least severe level logged: "+strings.Join(logging.Levels, ", ")+" (debug adds per-proxy and per-webhook detail)")
	fs.StringVar(&t.ReadTokenFile, KnobReadTokenFile.Flag, "", "file holding a token every read (status page, API, metrics) must carry; the health probes stay open (default: reads are open)")
	fs.IntVar(&t.XDSMaxConnections, KnobXDSMaxConnections.Flag, d.XDSMaxConnections, "most client connections the xDS listener holds open; one more is reset at once and counted in legate_xds_connections_refused_total")
	fs.StringVar(&t.XDSTransport, KnobXDSTransport.Flag, d.XDSTransport, "what carries xDS: lean (legate's own HTTP/2 transport: one goroutine a connection, responses written by their sender) or grpc (grpc-go's server)")
}

// Override sets each field of t whose knob changed says was given to the
// value it has in from (the Tuning AddFlags bound): how flags win over a
// config file.
func (t *Tuning) Override(from Tuning, changed func(flag string) bool) {
	for _, o := range []struct {
		k   Knob
		set func()
	}{
		{KnobHistory, func() { t.History = from.History }},
		{KnobTaintThreshold, func() { t.TaintThreshold = from.TaintThreshold }},
		{KnobAnswerTimeout, func() { t.AnswerTimeout = from.AnswerTimeout }},
		{KnobStatusMaxBackoff, func() { t.StatusMaxBackoff = from.StatusMaxBackoff }},
		{KnobXDSInsecure, func() { t.XDSInsecure = from.XDSInsecure }},
		{KnobLogFormat, func() { t.LogFormat = from.LogFormat }},
		{KnobLogLevel, func() { t.LogLevel = from.LogLevel }},
		{KnobReadTokenFile, func() { t.ReadTokenFile = from.ReadTokenFile }},
		{KnobXDSMaxConnections, func() { t.XDSMaxConnections = from.XDSMaxConnections }},
		{KnobXDSTransport, func() { t.XDSTransport = from.XDSTransport }},
	} {
		if changed(o.k.Flag) {
			o.set()
		}
	}
}

// withDefaults fills the fields left zero.
func (t Tuning) withDefaults() Tuning {
	d := Defaults()
	if t.History == 0 {
		t.History = d.History
	}
	if t.TaintThreshold == 0 {
		t.TaintThreshold = d.TaintThreshold
	}
	if t.AnswerTimeout == 0 {
		t.AnswerTimeout = d.AnswerTimeout
	}
	if t.StatusMaxBackoff == 0 {
		t.StatusMaxBackoff = d.StatusMaxBackoff
	}
	if t.XDSMaxConnections == 0 {
		t.XDSMaxConnections = d.XDSMaxConnections
	}
	if t.XDSTransport == "" {
		t.XDSTransport = d.XDSTransport
	}
	return t
}

// Problems lists every invalid knob of t, each naming its field and flag
// ("taintThreshold (--taint-threshold): must be in (0, 1], got 2"). A zero
// value is not a problem: it means the default.
func (t Tuning) Problems() []error {
	var errs []error
	add := func(k Knob, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", k, fmt.Sprintf(format, args...)))
	}
	if t.History < 0 {
		add(KnobHistory, "must be at least 1, got %d", t.History)
	}
	if t.TaintThreshold < 0 || t.TaintThreshold > 1 {
		add(KnobTaintThreshold, "must be in (0, 1], got %g", t.TaintThreshold)
	}
	if t.AnswerTimeout < 0 {
		add(KnobAnswerTimeout, "must not be negative, got %s", t.AnswerTimeout)
	}
	if t.StatusMaxBackoff < 0 || t.StatusMaxBackoff > maxStatusBackoff {
		add(KnobStatusMaxBackoff, "must be in (0, %s], got %s", maxStatusBackoff, t.StatusMaxBackoff)
	}
	if t.XDSMaxConnections < 0 {
		add(KnobXDSMaxConnections, "must be at least 1, got %d", t.XDSMaxConnections)
	}
	if t.XDSTransport != "" && t.XDSTransport != XDSTransportLean && t.XDSTransport != XDSTransportGRPC {
		add(KnobXDSTransport, "must be %q or %q, got %q", XDSTransportLean, XDSTransportGRPC, t.XDSTransport)
	}
	// logging's own words, so that both homes and the logger agree
	if _, err := logging.New(io.Discard, "", t.LogFormat); err != nil {
		add(KnobLogFormat, "%v", err)
	}
	if _, err := logging.ParseLevel(t.LogLevel); err != nil {
		add(KnobLogLevel, "%v", err)
	}
	return errs
}

// Validate is Problems joined into one error (nil when there is none).
func (t Tuning) Validate() error { return errors.Join(t.Problems()...) }

// ReadTokens are the tokens every read of the HTTP API must carry: the
// one ReadTokenFile holds, none when reads are open. An unreadable or
// empty file names the field and the flag.
func (t Tuning) ReadTokens() ([]string, error) {
	if t.ReadTokenFile == "" {
		return nil, nil
	}
	token, err := readapi.TokenFile(KnobReadTokenFile.String(), t.ReadTokenFile)
	if err != nil {
		return nil, err
	}
	return []string{token}, nil
}

// Logger is the logger LogFormat and LogLevel describe, writing to w.
func (t Tuning) Logger(w io.Writer) (logr.Logger, error) {
	log, err := logging.New(w, t.LogLevel, t.LogFormat)
	if err != nil {
		return logr.Discard(), fmt.Errorf("%s or %s: %w", KnobLogFormat, KnobLogLevel, err)
	}
	return log, nil
}

// XDSSecurity is how xDS is about to be served: the address it listens on
// and whether it runs over TLS, and with client certificates.
type XDSSecurity struct {
	Addr      string
	TLS       bool
	MutualTLS bool
}

func (s XDSSecurity) transport() string {
	if s.TLS || s.MutualTLS {
		return "TLS without client certificates"
	}
	return "plaintext"
}

// CheckXDSExposure is the one rule of both homes, checked before anything
// listens: xDS beyond loopback needs mutual TLS, unless the operator
// accepted the risk with --xds-insecure (XDSInsecure). Whoever reaches
// such a port could fetch every node's configuration and answer (ACK,
// NACK) for its proxies.
func (t Tuning) CheckXDSExposure(s XDSSecurity) error {
	if t.XDSInsecure || s.MutualTLS || !xds.BeyondLoopback(s.Addr) {
		return nil
	}
	return fmt.Errorf("xdsAddr (--xds-addr) %s reaches beyond loopback without mutual TLS (xDS would run over %s): any client that reaches it could fetch every node's configuration and answer for its proxies; "+
		"set --xds-tls-cert, --xds-tls-key and --xds-client-ca (legate pki init makes them; the Kubernetes home may use --pki-ca-secret instead), listen on 127.0.0.1, or accept the risk with --%s", s.Addr, s.transport(), KnobXDSInsecure.Flag)
}

// XDSExposureWarning is what to log once xDS listens on addr without
// mutual TLS beyond loopback (allowed by --xds-insecure): any client that
// reaches it can fetch any node's configuration under any node ID. It is
// "" when there is nothing to warn about.
func XDSExposureWarning(addr net.Addr, s XDSSecurity) string {
	if s.MutualTLS {
		return ""
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return ""
	}
	return fmt.Sprintf("xDS is served on %s over %s: any client that reaches it can fetch any node's configuration; set --xds-tls-cert, --xds-tls-key and --xds-client-ca (legate pki init makes them) or listen on loopback", addr, s.transport())
}
