package git

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/legate-dev/legate/sources"
)

func pktLine(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

// A hostile SSH server that streams a ref advertisement without end is cut
// at the bound (maxAdvertisement, lowered here to 2 MiB), with an error
// naming the host and the bound, as over HTTP. The same ref over and over keeps go-git's memory flat, so
// that without the bound the fetch runs into its timeout instead.
func TestSSHRefAdvertisementIsBounded(t *testing.T) {
	defer func(old int64) { sshAdvertisementLimit = old }(sshAdvertisementLimit)
	sshAdvertisementLimit = 2 << 20
	keyFile, sshPub := sshKey(t)
	hash := strings.Repeat("a", 40)
	srv := serveSSH(t, sshPub, func(ch ssh.Channel, _ string) uint32 {
		if _, err := io.WriteString(ch, pktLine(hash+" HEAD\x00side-band-64k ofs-delta\n")); err != nil {
			return 1
		}
		chunk := []byte(strings.Repeat(pktLine(hash+" refs/heads/main\n"), 1024))
		for {
			if _, err := ch.Write(chunk); err != nil {
				return 1 // the client went away
			}
		}
	})
	src := mustNew(t, Config{
		URL: "ssh://git@" + srv.addr + "/cfg.git", Timeout: 20 * time.Second,
		Auth: Auth{SSHKey: sources.Secret{File: keyFile}, KnownHosts: writeKnownHostsFile(t, srv.addr, srv.hostKey)},
	})
	_, err := src.Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the ref advertisement of "+srv.addr+" is over 2 MiB, legate's bound")
}

// The meter counts only until it is lifted: what follows the
// advertisement (the pack) is not read through the bound.
func TestAdvMeterCountsUntilLifted(t *testing.T) {
	server, client := net.Pipe()
	t.Cleanup(func() { _ = server.Close(); _ = client.Close() })
	m := newAdvMeter("git.example:22", 8)
	c := &meteredConn{Conn: client, m: m}
	go func() {
		_, _ = server.Write([]byte("12345678"))
		_, _ = server.Write(bytes.Repeat([]byte("p"), 64))
		_, _ = server.Write([]byte("9"))
	}()

	adv := make([]byte, 8)
	_, err := io.ReadFull(c, adv)
	require.NoError(t, err, "an advertisement at the bound is read whole")
	require.NoError(t, m.err())
	m.lift()
	pack := make([]byte, 64)
	_, err = io.ReadFull(c, pack)
	require.NoError(t, err, "the pack after the advertisement is not counted")

	// Without the lift, the byte past the bound cuts the connection.
	m2 := newAdvMeter("git.example:22", 8)
	c2 := &meteredConn{Conn: client, m: m2}
	m2.read.Store(8)
	_, err = c2.Read(make([]byte, 16))
	require.Error(t, err)
	assert.EqualError(t, err, "the ref advertisement of git.example:22 is over 0 MiB, legate's bound")
	assert.Equal(t, err, m2.err())
}
