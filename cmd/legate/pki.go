package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/serveconfig"
)

// The files of a PKI directory: the CA at its top, each issued pair in a
// directory laid out like a kubernetes.io/tls Secret.
const (
	caCertFile = "ca.crt"
	caKeyFile  = "ca.key"
	certFile   = "tls.crt"
	keyFile    = "tls.key"
)

func newPKICommand() *cobra.Command {
	cmd := &cobra.Command{
		Use: "pki",
		Example: `  legate pki init --host legate.internal --host 10.0.0.5
  legate pki issue --node edge`,
		Short: "Make a CA and the certificates of xDS over mutual TLS",
		Long: `pki is legate's small certificate authority for mutual TLS between proxies
and legate serve. "pki init" makes the CA and the xDS server's certificate;
"pki issue" issues a proxy's certificate for the node IDs it may fetch (or a
new server certificate). Serve with:

  legate serve --xds-tls-cert DIR/server/tls.crt --xds-tls-key DIR/server/tls.key \
    --xds-client-ca DIR/ca.crt ...

Keys are written with mode 0600 and never printed.`,
	}
	cmd.AddCommand(newPKIInitCommand(), newPKIIssueCommand())
	return cmd
}

func newPKIInitCommand() *cobra.Command {
	var (
		dir, name      string
		hosts          []string
		caFor, leafFor = durationValue(pki.DefaultCAValidity), durationValue(pki.DefaultLeafValidity)
	)
	cmd := &cobra.Command{
		Use: "init",
		Example: `  # CA and server certificate under ~/.config/legate/pki
  legate pki init --host legate.internal --host 10.0.0.5
  # somewhere else, with a shorter CA lifetime
  legate pki init --dir /etc/legate/pki --ca-valid-for 5y`,
		Short: "Make a CA and the xDS server's certificate in a directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := os.Stat(filepath.Join(dir, caKeyFile)); err == nil {
				return fmt.Errorf("%s already holds a CA: remove %s to start over, or use pki issue", dir, filepath.Join(dir, caKeyFile))
			}
			now := time.Now()
			ca, caIss, err := pki.NewCA(name, time.Duration(caFor), now)
			if err != nil {
				return err
			}
			srv, err := ca.IssueServer(hosts, time.Duration(leafFor), now)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			if err := writeFile(filepath.Join(dir, caKeyFile), caIss.KeyPEM, 0o600); err != nil {
				return err
			}
			if err := writeFile(filepath.Join(dir, caCertFile), caIss.CertPEM, 0o644); err != nil {
				return err
			}
			out := filepath.Join(dir, "server")
			if err := writePair(out, srv, ca.CertPEM()); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "CA %s\n  %s\n", pki.Describe(caIss.Cert), filepath.Join(dir, caCertFile))
			printIssued(w, "server", out, srv)
			fmt.Fprintf(w, "\nServe xDS over mutual TLS:\n  legate serve --xds-tls-cert %s --xds-tls-key %s --xds-client-ca %s ...\n",
				filepath.Join(out, certFile), filepath.Join(out, keyFile), filepath.Join(dir, caCertFile))
			fmt.Fprintf(w, "Issue a proxy's certificate:\n  legate pki issue --dir %s --node NODE_ID\n", dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultPKIDir(), "directory of the CA and the certificates (keep it out of any Git repository: it holds the CA's private key)")
	cmd.Flags().StringVar(&name, "ca-name", "legate xDS CA", "common name of the CA")
	cmd.Flags().StringSliceVar(&hosts, "host", []string{"localhost", "127.0.0.1"}, "DNS names and IP addresses proxies dial legate's xDS server at (repeatable)")
	cmd.Flags().Var(&caFor, "ca-valid-for", "lifetime of the CA (e.g. 10y, 90d, 12h)")
	cmd.Flags().Var(&leafFor, "valid-for", "lifetime of the server certificate (e.g. 1y, 90d)")
	return cmd
}

func newPKIIssueCommand() *cobra.Command {
	var (
		dir, out     string
		nodes, hosts []string
		validFor     = durationValue(pki.DefaultLeafValidity)
	)
	cmd := &cobra.Command{
		Use: "issue",
		Example: `  # a proxy's certificate for node edge
  legate pki issue --node edge
  # a new server certificate
  legate pki issue --host legate.internal --valid-for 30d`,
		Short: "Issue a proxy's certificate for node IDs (--node), or a new server certificate (--host)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (len(nodes) == 0) == (len(hosts) == 0) {
				return errors.New("give either --node (a proxy's certificate) or --host (a server certificate)")
			}
			ca, err := loadCA(dir)
			if err != nil {
				return err
			}
			now := time.Now()
			var iss pki.Issued
			kind := "proxy"
			if len(nodes) > 0 {
				iss, err = ca.IssueNode(nodes, time.Duration(validFor), now)
				if out == "" {
					out = filepath.Join(dir, "nodes", nodes[0])
				}
			} else {
				kind = "server"
				iss, err = ca.IssueServer(hosts, time.Duration(validFor), now)
				if out == "" {
					out = filepath.Join(dir, "server")
				}
			}
			if err != nil {
				return err
			}
			if err := writePair(out, iss, ca.CertPEM()); err != nil {
				return err
			}
			printIssued(cmd.OutOrStdout(), kind, out, iss)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultPKIDir(), "directory of the CA (made by pki init)")
	cmd.Flags().StringSliceVar(&nodes, "node", nil, "node ID the proxy may fetch (repeatable)")
	cmd.Flags().StringSliceVar(&hosts, "host", nil, "DNS name or IP address of a new server certificate (repeatable)")
	cmd.Flags().StringVar(&out, "out", "", "directory of tls.crt, tls.key and ca.crt (default DIR/nodes/<first node>, or DIR/server)")
	cmd.Flags().Var(&validFor, "valid-for", "lifetime of the certificate (e.g. 1y, 90d)")
	return cmd
}

func loadCA(dir string) (*pki.CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, caCertFile))
	if err != nil {
		return nil, fmt.Errorf("read the CA (run legate pki init --dir %s first): %w", dir, err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, caKeyFile))
	if err != nil {
		return nil, fmt.Errorf("read the CA key: %w", err)
	}
	ca, err := pki.LoadCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return ca, nil
}

// writePair writes tls.crt, tls.key and ca.crt into dir, each replaced in
// one rename so a server reloading them never reads half a file.
func writePair(dir string, iss pki.Issued, caPEM []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, keyFile), iss.KeyPEM, 0o600); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, certFile), iss.CertPEM, 0o644); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, caCertFile), caPEM, 0o644)
}

func writeFile(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func printIssued(w io.Writer, kind, dir string, iss pki.Issued) {
	fmt.Fprintf(w, "%s certificate %s\n  %s, %s (key, mode 0600), %s\n", kind, pki.Describe(iss.Cert),
		filepath.Join(dir, certFile), filepath.Join(dir, keyFile), filepath.Join(dir, caCertFile))
}

// defaultPKIDir is where pki keeps the CA unless --dir says otherwise:
// $LEGATE_PKI_DIR, else legate/pki under the user's configuration
// directory (~/.config/legate/pki), never the working directory, which is
// often a repository the CA's private key must not be committed to.
func defaultPKIDir() string {
	if d := os.Getenv("LEGATE_PKI_DIR"); d != "" {
		return d
	}
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "legate", "pki")
	}
	return filepath.Join(serveconfig.DefaultStateDir, "pki")
}
