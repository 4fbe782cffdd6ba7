package git

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
)

// credentials is the result of reading a source's Auth: the transport auth
// method and every secret value read, for scrubbing errors.
type credentials struct {
	method  transport.AuthMethod
	secrets []string
}

// remoteURL splits a configured URL into the URL handed to go-git (without
// user info for http(s)) and the user info it carried.
func remoteURL(raw string) (string, *url.Userinfo, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || len(u.Scheme) == 1 { // paths, C:\ and scp-like forms
		return raw, nil, nil //nolint:nilerr // not a URL: a local path or scp-like address
	}
	switch u.Scheme {
	case "http", "https":
		user := u.User
		u.User = nil
		return u.String(), user, nil
	case "ssh", "file":
		return raw, nil, nil
	default:
		return "", nil, fmt.Errorf("url scheme %q is not supported: use https, http, ssh, file or a local path", u.Scheme)
	}
}

// isSSH reports whether the endpoint talks SSH (ssh:// or scp-like).
func isSSH(endpoint string) bool {
	ep, err := transport.NewEndpoint(endpoint)
	return err == nil && ep.Protocol == "ssh"
}

// readCredentials builds the auth method for endpoint from auth and the user
// info that was in the configured URL.
func readCredentials(auth Auth, endpoint string, urlUser *url.Userinfo) (credentials, error) {
	var c credentials
	if urlUser != nil {
		if pw, ok := urlUser.Password(); ok && pw != "" {
			c.secrets = append(c.secrets, pw)
		}
		c.secrets = append(c.secrets, urlUser.String())
	}
	if isSSH(endpoint) {
		return sshCredentials(auth, endpoint)
	}
	switch {
	case auth.BearerToken.IsSet():
		tok, err := auth.BearerToken.Read()
		if err != nil {
			return c, fmt.Errorf("bearer token: %w", err)
		}
		c.secrets = append(c.secrets, tok)
		c.method = &http.TokenAuth{Token: tok}
	case auth.Password.IsSet():
		pw, err := auth.Password.Read()
		if err != nil {
			return c, fmt.Errorf("password: %w", err)
		}
		c.secrets = append(c.secrets, pw)
		user := auth.Username
		if user == "" {
			user = "git"
		}
		c.method = &http.BasicAuth{Username: user, Password: pw}
	case urlUser != nil:
		pw, _ := urlUser.Password()
		c.method = &http.BasicAuth{Username: urlUser.Username(), Password: pw}
	case auth.SSHKey.IsSet():
		return c, fmt.Errorf("an ssh key is set but the url %q does not use ssh", endpoint)
	}
	return c, nil
}

func sshCredentials(auth Auth, endpoint string) (credentials, error) {
	var c credentials
	if !auth.SSHKey.IsSet() {
		return c, fmt.Errorf("ssh url %q needs an ssh private key", endpoint)
	}
	if auth.KnownHosts == "" {
		return c, fmt.Errorf("ssh url %q needs a known_hosts file with the server's host key (host key checking cannot be turned off)", endpoint)
	}
	if _, err := os.Stat(auth.KnownHosts); err != nil {
		return c, fmt.Errorf("known_hosts file for %q: %w", endpoint, err)
	}
	hostKeys, err := knownhosts.NewDB(auth.KnownHosts)
	if err != nil {
		return c, fmt.Errorf("parse known_hosts file %q: %w", auth.KnownHosts, err)
	}
	key, err := auth.SSHKey.Read()
	if err != nil {
		return c, fmt.Errorf("ssh key: %w", err)
	}
	c.secrets = append(c.secrets, key)
	var pass string
	if auth.SSHKeyPassphrase.IsSet() {
		if pass, err = auth.SSHKeyPassphrase.Read(); err != nil {
			return c, fmt.Errorf("ssh key passphrase: %w", err)
		}
		c.secrets = append(c.secrets, pass)
	}
	user := auth.Username
	if user == "" {
		user = "git"
		if ep, err := transport.NewEndpoint(endpoint); err == nil && ep.User != "" {
			user = ep.User
		}
	}
	keys, err := gitssh.NewPublicKeys(user, []byte(key+"\n"), pass)
	if err != nil {
		// The parser's message does not echo the key; keep only its gist.
		return c, fmt.Errorf("ssh key is not a usable PEM private key (or the passphrase is wrong): %s", firstLine(err.Error()))
	}
	check := hostKeys.HostKeyCallback()
	keys.HostKeyCallback = func(host string, remote net.Addr, k ssh.PublicKey) error {
		if err := check(host, remote, k); err != nil {
			return fmt.Errorf("host key of %s is not accepted by known_hosts file %q: %w", host, auth.KnownHosts, err)
		}
		return nil
	}
	if ep, err := transport.NewEndpoint(endpoint); err == nil {
		port := ep.Port
		if port == 0 {
			port = 22
		}
		keys.HostKeyAlgorithms = hostKeys.HostKeyAlgorithms(net.JoinHostPort(ep.Host, fmt.Sprint(port)))
	}
	c.method = keys
	return c, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
